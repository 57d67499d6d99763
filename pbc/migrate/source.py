"""One file being migrated: its text, its syntax tree, and the edits made to it.

Edits are byte ranges of the original text with their replacement. They never overlap
partially: an edit may replace a range that holds earlier edits, and then its text must
already include them, which `render` gives. So a rewrite built from pieces of the source
(a lambda's body becoming a statement) keeps the renames made inside those pieces, and
everything outside the edited ranges stays byte for byte as it was.
"""

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Report:
    """Something the tool could not do, or wants the reader to check, at file:line."""
    filename: str
    line: int
    message: str

    def __str__(self):
        return f'{self.filename}:{self.line}: {self.message}'


class Overlap(Exception):
    """Two rewrites claim parts of the same text."""


class Source:
    def __init__(self, text, filename='<source>'):
        self.filename = filename
        self.tree = ast.parse(text, filename)
        self.data = text.encode()
        # The line break that new lines get: the file's own.
        self.newline = '\r\n' if b'\r\n' in self.data.split(b'\n', 1)[0] + b'\n' else '\n'
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.edits = []             # (start, end, bytes), sorted, never partly overlapping
        self.reports = []
        for node in ast.walk(self.tree):             # parent links for the rewrites
            for child in ast.iter_child_nodes(node):
                child.parent = node

    # ---- positions ----------------------------------------------------------------------
    def at(self, line, col):
        return self.starts[line - 1] + col

    def span(self, node):
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno,
                                                               node.end_col_offset)

    def lines(self, node):
        """The whole lines `node` stands on (with the line break of the last one)."""
        return self.starts[node.lineno - 1], self.starts[min(node.end_lineno,
                                                             len(self.starts) - 1)]

    def skip_blank_lines(self, at):
        """The start of the first line from `at` on that is not blank."""
        while at < len(self.data):
            end = self.data.find(b'\n', at)
            end = len(self.data) if end < 0 else end + 1
            if self.data[at:end].strip():
                break
            at = end
        return at

    def alone_on_lines(self, node):
        """Whether nothing but blanks and a comment shares the lines of the statement."""
        start, end = self.lines(node)
        a, b = self.span(node)
        rest = self.data[b:end].strip()
        return not self.data[start:a].strip() and (not rest or rest.startswith(b'#'))

    def indent(self, line):
        text = self.data[self.starts[line - 1]:self.starts[line]].decode()
        return text[:len(text) - len(text.lstrip())]

    def report(self, node_or_line, message):
        report = Report(self.filename, getattr(node_or_line, 'lineno', node_or_line), message)
        if report not in self.reports:
            self.reports.append(report)

    # ---- edits --------------------------------------------------------------------------
    def replace(self, start, end, text):
        """Replace bytes [start, end) of the original with `text` (which must include any
        earlier edits inside that range: see `render`)."""
        inside = [e for e in self.edits if start < end and _within(e, start, end)]
        for s, e, _ in self.edits:
            if (s, e, _) not in inside and s < end and start < e:
                raise Overlap(f'{self.filename}: overlapping rewrites at bytes {start}..{end}')
        self.edits = sorted([e for e in self.edits if e not in inside] +
                            [(start, end, text.encode() if isinstance(text, str) else text)],
                            key=lambda e: (e[0], e[1]))

    def replace_node(self, node, text):
        self.replace(*self.span(node), text)

    def insert(self, at, text):
        self.replace(at, at, text)

    def render(self, start, end):
        """The text of [start, end) with the edits inside it applied."""
        out, pos = [], start
        for s, e, text in self.edits:
            if _within((s, e, text), start, end):
                out += [self.data[pos:s], text]
                pos = e
        out.append(self.data[pos:end])
        return b''.join(out).decode()

    def text(self, node):
        return self.render(*self.span(node))

    def result(self):
        return self.render(0, len(self.data))


def _within(edit, start, end):
    s, e, _ = edit
    return start <= s and e <= end and not (s == e == end and start != end)
