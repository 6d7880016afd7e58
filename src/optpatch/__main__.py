from optpatch.cli import main

main()
