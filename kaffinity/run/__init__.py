"""The run layer: one command's run, between the command line and the report.

The command line (:mod:`kaffinity.cli`) parses options into the inputs (:mod:`kaffinity.run.inputs`,
resolved once: paths, stdin, context manifests, settings), calls one command's run once
(:mod:`kaffinity.run.lint`, ``place``, ``explain``, ``graph``, ``fix``, ``expand``, ``policy``) and prints the
outcome it gets back. The workspace (:mod:`kaffinity.run.workspace`, :mod:`kaffinity.run.layout`)
reads the files (streamed through the single-object stage and the cache, or whole), builds the
deployment units, renders, loads the cluster and calls the engine. Nothing here prints or exits:
what the run has to say is data (:class:`kaffinity.run.notes.Notes`), an error an exception
(:class:`kaffinity.run.notes.RunError`) carrying its lines.
"""
