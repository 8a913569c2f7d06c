from torchgrabcut.cli import main

raise SystemExit(main())
