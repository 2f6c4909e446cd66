from dle_desktop.cli.main import main

raise SystemExit(main())
