import sys

from flashinfer_bench.cli.main import main

sys.exit(main())
