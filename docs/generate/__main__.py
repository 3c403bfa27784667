"""``python -m docs.generate [configuration|api_guide ...] [--check]``: see ``docs.generate``."""

import argparse
import sys

PAGES = ("configuration", "api_guide")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.generate", description=__doc__)
    parser.add_argument("pages", nargs="*", metavar="page", help=f"{' or '.join(PAGES)} (all when none is named).")
    parser.add_argument("--check", action="store_true", help="Only check that docs/configuration.md is up to date.")
    arguments = parser.parse_args(argv)
    unknown = set(arguments.pages) - set(PAGES)
    if unknown:
        parser.error(f"no page {', '.join(sorted(unknown))}; the pages are {', '.join(PAGES)}")
    failures = 0
    for page in arguments.pages or PAGES:
        if page == "configuration":
            from docs.generate import configuration

            failures += configuration.main(check=arguments.check)
        elif not arguments.check:
            from docs.generate import api_guide

            failures += api_guide.main()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
