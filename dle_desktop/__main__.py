import multiprocessing

from dle_desktop.cli.main import main

if __name__ == "__main__":
    # In the packaged app the Graph view's child process starts this same executable: there
    # freeze_support() runs the child's work and exits instead of starting another app.
    multiprocessing.freeze_support()
    raise SystemExit(main())
