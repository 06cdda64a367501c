from kaffinity.cli import main

main()
