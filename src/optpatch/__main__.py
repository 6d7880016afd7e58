from optpatch.cli import entry

entry()
