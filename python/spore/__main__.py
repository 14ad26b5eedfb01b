import sys

from .env import main

sys.exit(main())
