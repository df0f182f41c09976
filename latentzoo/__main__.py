from latentzoo.cli import main

raise SystemExit(main())
