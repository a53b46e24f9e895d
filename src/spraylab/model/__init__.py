"""The scenario model: the schema (:mod:`.scenario`), its types, errors and overrides, the
kinds registered behind it, variants, the files a scenario reads and the sweep file's schema."""
