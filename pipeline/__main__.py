"""`python -m pipeline ...` is the `digest` command."""

from pipeline.cli import main

if __name__ == "__main__":
    main(prog_name="digest")
