"""The command line: one module per command group; shared argument helpers in args.py."""
