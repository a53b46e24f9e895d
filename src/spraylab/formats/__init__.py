"""Reading and writing other simulators' files.

* :mod:`spraylab.formats.rows`: explicit flow rows (CSV, Parquet, inline) and the errors that
  name a file's row and column;
* :mod:`spraylab.formats.htsim`: htsim connection matrices (``.cm``) and fat-tree descriptions
  (``.topo``);
* :mod:`spraylab.formats.ns3`: the HPCC/ns-3 ``flow.txt`` and ``topology.txt``;
* :mod:`spraylab.formats.settings`: what of a peer's run settings (HPCC's ``config.txt``, htsim's
  UEC transport, MTU and ACK rule) an import carries over, and a note for each that does not;
* :mod:`spraylab.formats.export`: HPCC's ``fct.txt`` and htsim-style finish lines, by the peers'
  definitions (:mod:`spraylab.formats.standalone`: HPCC's standalone FCT);
* :mod:`spraylab.formats.importer`: ``spraylab import``, a scenario file that reads them.

The formats are documented in ``docs/formats.md``, with how each field maps onto spraylab and
which fields are refused because spraylab cannot model them."""
