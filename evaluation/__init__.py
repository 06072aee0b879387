"""Running ``spotsched evaluate``: its cells played on every core or on a Ray cluster, kept in
a cache on disk, with progress; the reports (tables and plots) the command line shows."""
