# The repositories under repos/ are what `--validate` runs its own pytest on; they are not part of this suite.
collect_ignore = ["repos"]
