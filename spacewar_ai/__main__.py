"""`python -m spacewar_ai`: the same CLI as `spacewar-ai`."""

from .main import main

if __name__ == "__main__":
    raise SystemExit(main())
