"""Loading: from paths to documents whose every key and item knows its line and column.

Owns discovery (directories, gitignore, excludes), reading within the limits, the classification
of files (manifest or not), YAML/JSON parsing with positions, reading in several processes
(``--jobs``), the git listing of a repository, minimal text edits (for ``fix``), the package's
data files, and the display-safe form of text from the input.

May import: nothing else of kaffinity (it is the bottom layer).
"""
