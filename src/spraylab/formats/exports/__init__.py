"""The export layouts of ``spraylab export``: one module each (:data:`spraylab.formats.export.EXPORT_LAYOUTS`)."""
