from dle_desktop.cli import main

raise SystemExit(main())
