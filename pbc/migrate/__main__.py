"""python -m pbc.migrate [--write | --check] PATH...

Prints a unified diff of what migrating each file would change (directories: every .py
file under them); --write rewrites the files, --check exits with status 1 if any would
change (for CI). What is left as is gets a line on stderr: file:line: reason.
"""

import argparse
import difflib
import sys
import tokenize
from pathlib import Path

from . import migrate


def files(paths):
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(f for f in p.rglob('*.py')
                              if not any(part.startswith('.') or part == '__pycache__'
                                         for part in f.relative_to(p).parts))
        else:
            yield p


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m pbc.migrate', description=__doc__.split(
        '\n\n')[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('paths', nargs='+', metavar='PATH', help='.py files or directories')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--write', action='store_true', help='rewrite the files in place')
    mode.add_argument('--check', action='store_true',
                      help='exit with status 1 if a file would change; write nothing')
    args = parser.parse_args(argv)
    status, changed = 0, []
    for path in files(args.paths):
        try:
            with open(path, 'rb') as f:
                encoding, _ = tokenize.detect_encoding(f.readline)
            old = path.read_bytes().decode(encoding)
            new, reports = migrate(old, str(path))
        except (OSError, SyntaxError, UnicodeDecodeError) as e:
            print(f'{path}: cannot migrate: {e}', file=sys.stderr)
            status = 2
            continue
        for r in reports:
            print(r, file=sys.stderr)
        if new == old:
            continue
        changed.append(path)
        if args.write:
            path.write_bytes(new.encode(encoding))
            print(f'rewrote {path}', file=sys.stderr)
        elif args.check:
            print(f'would rewrite {path}', file=sys.stderr)
        else:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                str(path), str(path)))
    if args.check and changed and status == 0:
        status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
