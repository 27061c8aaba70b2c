"""Delimited text on a real parser: sources, sniffing, vectorised parsing, and errors that name the line.

A text source (a path, a file-like object, an :class:`io.StringIO` or a
``str`` holding the data itself) is parsed by pyarrow's multi-threaded CSV
reader when it is installed, else by pandas' C engine; whitespace-separated
text always by pandas' C engine. The parse is vectorised and optimistic: a
clean file is read straight from disk. Anything the fast pass cannot take
(comment lines, lines of only whitespace, text that is not a number where a
number is expected, a row of the wrong width, bytes that are not UTF-8) sends
the source down an exact pass, which maps every row to its physical line
(counting the header, comments and blank lines) and either reads the file or
raises a :class:`ScoreFileError` naming the file, the line and the column.
"""

from __future__ import annotations

import contextlib

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from bioxr.cube import ScoreCubeError

try:  # pyarrow is the fast path (the "io" extra); pandas' C engine reads everything without it
    import pyarrow as pa
    import pyarrow.csv as pacsv
except ImportError:  # pragma: no cover - exercised only without the io extra
    pa = pacsv = None

WHITESPACE = "whitespace"
ENGINE = "pyarrow"  # or "pandas" (its C engine): the parser of delimited text; whitespace is always pandas'
_SNIFFED = (",", "\t", ";")
_HEAD = 1 << 16


class ScoreFileError(ScoreCubeError):
    """A score file cannot be read; the message names the file, the place and the fix."""


ScoreFileError.__module__ = "bioxr.io"  # its public home


class _Retry(Exception):
    """The fast pass cannot take this source: take the exact one."""


# ------------------------------------------------------------------- sources
class Source:
    """Where text comes from: a path (read lazily, streamed to the parser) or bytes in memory.

    A ``str`` holding a newline is the data itself; any object with ``read()``
    (text or binary) is read whole; anything else is a path.
    """

    def __init__(self, obj):
        self.path: Path | None = None
        self._data: bytes | None = None
        if isinstance(obj, Source):
            self.path, self._data, self.name = obj.path, obj._data, obj.name
            return
        if isinstance(obj, str) and "\n" in obj:
            self._data, self.name = obj.encode("utf-8"), "<text>"
        elif hasattr(obj, "read"):
            content = obj.read()
            name = getattr(obj, "name", None)
            self.name = str(name) if isinstance(name, (str, Path)) else "<text>" if isinstance(obj, io.StringIO) \
                else "<stream>"
            if isinstance(content, str):
                content = content.encode("utf-8")
            if not isinstance(content, (bytes, bytearray, memoryview)):
                raise ScoreFileError(f"{self.name}: read() returned {type(content).__name__}, not text or bytes.")
            self._data = bytes(content)
        else:
            self.path = existing_file(obj)
            self.name = str(self.path)
        if self._data is not None and not self._data:
            raise ScoreFileError(f"{self.name}: the file is empty (0 bytes); it holds no scores.")

    def __str__(self) -> str:
        return self.name

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower() if self.path is not None else ""

    def data(self) -> bytes:
        if self._data is None:
            try:
                self._data = self.path.read_bytes()
            except OSError as err:
                raise ScoreFileError(f"{self}: cannot be read ({err.strerror or err}).") from err
        return self._data

    def head(self, n: int) -> bytes:
        if self._data is not None or self.path is None:
            return self.data()[:n]
        with self.path.open("rb") as handle:
            return handle.read(n)

    def size(self) -> int:
        return len(self._data) if self._data is not None else self.path.stat().st_size

    def stream(self):
        """What a parser reads: the path itself (streamed from disk) or the bytes in memory."""
        return str(self.path) if self._data is None else io.BytesIO(self._data)


def existing_file(path) -> Path:
    """``path`` as a Path, or a ScoreFileError saying why it cannot be a score file."""
    try:
        path = Path(path)
    except TypeError:
        raise ScoreFileError(f"expected a path, a file-like object or text holding a newline; got "
                             f"{type(path).__name__}.") from None
    if not path.exists():
        raise ScoreFileError(f"{path}: no such file. Check the path (relative paths start at {Path.cwd()}).")
    if path.is_dir():
        raise ScoreFileError(f"{path}: is a directory, not a score file. A Zarr store is a directory: open it "
                             "with open_score_cube or read_scores.")
    if path.stat().st_size == 0:
        raise ScoreFileError(f"{path}: the file is empty (0 bytes); it holds no scores.")
    return path


def check_text(src: Source, data: bytes, *, whole: bool) -> str:
    """Decode UTF-8 (a BOM allowed), refusing binary data with the line of the first bad byte."""
    if b"\x00" in data[:_HEAD]:
        raise ScoreFileError(f"{src}: is binary, not text (it holds NUL bytes). Score text files are UTF-8; for "
                             "Parquet, npz, netCDF or Zarr use read_scores, which picks the reader by suffix.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if not whole and err.start >= len(data) - 4:  # a character cut by the end of the head
            return data[: err.start].decode("utf-8-sig")
        line = data[: err.start].count(b"\n") + 1
        raise ScoreFileError(f"{src}: line {line} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                             f"{err.start}). Save the file as UTF-8, or check that it is a score file.") from err


# ------------------------------------------------------------------ sniffing
def _skippable(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def split_cells(line: str, delimiter: str) -> list[str]:
    if delimiter == WHITESPACE:
        return line.split()
    return [c.strip() for c in next(csv.reader([line], delimiter=delimiter), [])]


def sniff_delimiter(lines: list[str]) -> str:
    """The delimiter the first lines agree on: comma, tab, semicolon, else runs of whitespace."""
    best, best_count = None, 0
    for d in _SNIFFED:
        counts = [len(split_cells(line, d)) for line in lines]
        if counts[0] > 1 and all(c == counts[0] for c in counts) and counts[0] > best_count:
            best, best_count = d, counts[0]
    if best is None:
        for d in _SNIFFED:  # rows disagree (a bad row, or quoting): the most common in the header
            if lines[0].count(d):
                best = best if best and lines[0].count(best) >= lines[0].count(d) else d
    if best is None:
        return WHITESPACE if len(lines[0].split()) > 1 else ","
    return best


def normalise_delimiter(delimiter, src: Source) -> str | None:
    if delimiter is None:
        return "\t" if src.suffix == ".tsv" else None
    if delimiter in (" ", r"\s+", WHITESPACE):
        return WHITESPACE
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise ScoreFileError(f"{src}: delimiter={delimiter!r} is not a delimiter; give one character (',', '\\t', "
                             "';') or 'whitespace' for runs of spaces and tabs.")
    return delimiter


@dataclass
class Layout:
    """What the head of a text file says: its delimiter and header."""

    delimiter: str
    header_line: int  # physical line number of the header (0: no header)
    names: list[str]
    first_data: list[str] = field(default_factory=list)  # the first data lines, for format detection


def sniff(src: Source, *, delimiter=None, header: bool = True, empty: str | None = None) -> Layout:
    """Find the header (the first line that is neither blank nor a ``#`` comment) and the delimiter."""
    n = _HEAD
    while True:
        head = src.head(n)
        whole = len(head) >= src.size()
        text = check_text(src, head, whole=whole)
        lines = text.splitlines()
        if not whole and lines:
            lines = lines[:-1]  # maybe cut
        content = [(k, line) for k, line in enumerate(lines, start=1) if not _skippable(line)]
        if whole or len(content) >= 20 or (len(content) >= 3 and n >= 1 << 20):
            break
        n *= 4
    if not content:
        raise ScoreFileError(f"{src}: " + (empty or "the file is empty (only whitespace or comments); it holds "
                                                    "no scores."))
    d = normalise_delimiter(delimiter, src) or sniff_delimiter([line for _, line in content[:20]])
    if not header:
        return Layout(d, 0, [], [line for _, line in content[:20]])
    hline, hcells = content[0]
    return Layout(d, hline, split_cells(hcells.lstrip("\ufeff"), d), [line for _, line in content[1:20]])


# ------------------------------------------------------------------ columns
@dataclass
class Labels:
    """A text column as integer codes into its distinct values; code -1 is an empty cell."""

    codes: np.ndarray
    uniques: np.ndarray
    missing: object = ""  # what an empty cell reads as ('' in text, None in Parquet)

    def __len__(self) -> int:
        return len(self.codes)

    def values(self) -> np.ndarray:
        """The column as an array (the distinct values indexed by the codes)."""
        uniques = self.uniques
        if uniques.dtype.kind == "U":
            uniques = uniques.astype(object)
        if (self.codes < 0).any():
            fill = np.asarray([self.missing], dtype=uniques.dtype if uniques.dtype.kind in "fO" else object)
            return np.concatenate([uniques, fill]).take(self.codes)  # -1 takes the fill
        return uniques.take(self.codes)

    def remap(self, uniques) -> Labels:
        """Merge distinct values that became equal (after stripping or normalisation)."""
        new_codes, merged = pd.factorize(pd.Series(np.asarray(uniques, dtype=object), dtype=object))
        codes = np.where(self.codes < 0, -1, new_codes[np.maximum(self.codes, 0)]) if len(new_codes) else self.codes
        return Labels(codes.astype(self.codes.dtype, copy=False), np.asarray(merged, dtype=object), self.missing)


def labels_of(values, *, missing=None) -> Labels:
    """Labels of an array or Series (NaN, None: code -1)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    uniques = np.asarray(uniques, dtype=object if getattr(uniques, "dtype", None) == "str" else None)
    return Labels(codes.astype(np.int64, copy=False), uniques, missing)


def strip_labels(col: Labels) -> Labels:
    """Cells of text are stripped of surrounding whitespace; a cell of only whitespace is empty."""
    u = col.uniques
    if u.dtype.kind not in "OU" or not len(u):
        return col
    stripped = pd.Series(u, dtype=object).str.strip()
    if stripped.isna().any():  # not text (a Parquet column of objects): left as it is
        return col
    if (stripped.to_numpy() == u).all():
        return col
    return col.remap(stripped.where(stripped != "", None).to_numpy(dtype=object))


def arrow_column(column):
    """An Arrow column as the readers hold it: :class:`Labels` for text (dictionaries decoded first, no missing
    marker), else a NumPy array."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
        column = column.cast(kind)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        labels = _arrow_labels(column.cast(pa.string()))
        labels.missing = None
        return labels
    return column.to_numpy()


def _arrow_labels(chunked) -> Labels:
    import pyarrow.compute as pc

    enc = chunked.dictionary_encode()
    enc = enc.combine_chunks() if hasattr(enc, "combine_chunks") else enc
    indices = enc.indices if not enc.indices.null_count else enc.indices.fill_null(-1)
    codes = indices.to_numpy(zero_copy_only=False)
    dictionary = enc.dictionary
    trimmed = pc.utf8_trim_whitespace(dictionary)
    col = Labels(codes, trimmed.to_numpy(zero_copy_only=False), "")
    if not trimmed.equals(dictionary) or pc.any(pc.equal(trimmed, "")).as_py():
        col = col.remap(np.where(col.uniques == "", None, col.uniques))
    return col


def to_float(col, *, where) -> np.ndarray:
    """Numbers of a column: '' and 'nan' are NaN; other text must be a number, else the cell is named.

    ``where(row)`` says where a row is (e.g. "line 7, column 'score'").
    """
    if not isinstance(col, Labels):
        values = np.asarray(col)
        if values.dtype.kind in "iub":
            return values.astype(np.float64)
        if values.dtype.kind == "f":
            return values if values.dtype in (np.float32, np.float64) else values.astype(np.float64)
        col = labels_of(values)
    u = np.asarray(col.uniques, dtype=object)
    if u.size and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in u):
        numbers = u.astype(np.float64)
    else:
        text = np.asarray(["" if v is None else str(v).strip() for v in u], dtype=object)
        numbers = pd.to_numeric(pd.Series(text, dtype=object).replace("", "nan"), errors="coerce").to_numpy(
            dtype=np.float64)
        bad = np.isnan(numbers) & ~np.isin(np.char.lower(text.astype(str)), ["", "nan", "+nan", "-nan"])
        if bad.any():
            row = int(np.flatnonzero(bad[np.maximum(col.codes, 0)] & (col.codes >= 0))[0])
            raise _NotANumber(row, str(text[col.codes[row]]), where)
    return np.concatenate([numbers, [np.nan]]).take(col.codes) if (col.codes < 0).any() else numbers.take(col.codes)


class _NotANumber(Exception):
    def __init__(self, row, text, where):
        super().__init__(row)
        self.row, self.text, self.where = row, text, where

    def message(self, src) -> str:
        return (f"{src}: {self.where(self.row)}: {self.text!r} is not a number. Scores must be numbers; leave the "
                "cell empty (or write nan) for 'not compared'.")


def scores_of(src, col, *, where) -> np.ndarray:
    """``to_float`` with a ScoreFileError naming the cell, and infinities refused."""
    try:
        values = to_float(col, where=where)
    except _NotANumber as err:
        raise ScoreFileError(err.message(src)) from None
    check_finite(src, values, where)
    return values


def check_finite(src, values: np.ndarray, where) -> None:
    if values.size and not np.isfinite(np.add.reduce(values)):
        inf = np.isinf(values)
        if inf.any():
            row = int(np.argmax(inf))
            raise ScoreFileError(f"{src}: {where(row)}: the score is infinite ({values[row]}); {int(inf.sum())} "
                                 "score(s) are. Scores must be finite: leave the cell empty (or write nan) for 'not "
                                 "compared', or declare a sentinel with missing=.")


# ----------------------------------------------------------------- line maps
_BOM = b"\xef\xbb\xbf"


class LineMap:
    """Physical line number of each data row, computed only when a message needs one.

    Data rows are the lines after the header that are neither blank nor
    comments (``#`` first). Quoted fields may hold newlines; then the
    records are counted by the csv module (only here, on the way to an error).
    """

    def __init__(self, src: Source, lay: Layout, *, quoting: bool):
        self.src, self.lay, self.quoting = src, lay, quoting
        self._lines: np.ndarray | None = None

    def __call__(self, row: int) -> str:
        return f"line {self.lines()[row]}"

    def lines(self) -> np.ndarray:
        if self._lines is None:
            data = self.src.data()
            if self.quoting and b'"' in data:
                self._lines = np.asarray([n for n, _ in _csv_records(self.src, self.lay)], dtype=np.int64)
            else:
                numbers, starts, ends = _line_bounds(data)
                self._lines = numbers[self._keep(data, numbers, starts, ends)]
        return self._lines

    def _keep(self, data, numbers, starts, ends) -> np.ndarray:
        return _data_lines(data, starts, ends) & (numbers > self.lay.header_line)

    def filtered(self) -> bytes:
        """The data lines alone: the header, comments and blank lines dropped (a BOM too)."""
        data = self.src.data()
        numbers, starts, ends = _line_bounds(data)
        if data.startswith(_BOM):
            starts = starts.copy()
            starts[0] += len(_BOM)
        keep = self._keep(data, numbers, starts, ends)
        kept = np.flatnonzero(keep)
        if not kept.size:
            return b""
        gaps = np.flatnonzero(np.diff(kept) != 1)
        first, last = np.r_[kept[0], kept[gaps + 1]], np.r_[kept[gaps], kept[-1]]
        return b"".join(data[starts[a]:ends[b]] + b"\n" for a, b in zip(first, last))


def _line_bounds(data: bytes):
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    starts = np.r_[0, nl + 1]
    ends = np.r_[nl, len(arr)]
    if starts[-1] == len(arr):  # the file ends with a newline: no line after it
        starts, ends = starts[:-1], ends[:-1]
    return np.arange(1, len(starts) + 1), starts, ends


def _data_lines(data: bytes, starts, ends) -> np.ndarray:
    """True for lines holding data: not empty, not only whitespace, not a comment."""
    arr = np.frombuffer(data, dtype=np.uint8)
    length = ends - starts
    first = np.full(len(starts), 10, dtype=np.uint8)
    first[length > 0] = arr[starts[length > 0]]
    keep = (length > 0) & (first != 35)
    for k in np.flatnonzero(keep & np.isin(first, (32, 9, 11, 12, 13, 0xEF))):  # look closer: rare
        keep[k] = not _skippable(data[starts[k]:ends[k]].decode("utf-8", errors="replace").lstrip("\ufeff"))
    return keep


def _csv_records(src: Source, lay: Layout):
    """(first line, cells) of each data record, by the csv module: quoted fields may span lines."""
    text = check_text(src, src.data(), whole=True)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=lay.delimiter)
    start = 1
    for cells in reader:
        if start > lay.header_line and cells and (len(cells) > 1 or cells[0].strip()) \
                and not cells[0].lstrip().startswith("#"):
            yield start, cells
        start = reader.line_num + 1


def _field_counts(data: bytes, lay: Layout, lines: np.ndarray) -> np.ndarray:
    """Cells on each of the given (1-based, non-empty) lines, vectorised; no quoting."""
    _, starts, ends = _line_bounds(data)
    arr = np.frombuffer(data, dtype=np.uint8)
    if lay.delimiter == WHITESPACE:
        solid = ~np.isin(arr, (32, 9, 10, 11, 12, 13))
        marks = solid & np.r_[True, ~solid[:-1]]  # the first byte of each field
        extra = 0
    else:
        marks = arr == ord(lay.delimiter)
        extra = 1
    marks = np.r_[marks, False]
    bounds = np.column_stack([starts[lines - 1], ends[lines - 1]]).ravel()
    return np.add.reduceat(marks, bounds, dtype=np.int64)[::2] + extra


# ------------------------------------------------------------------- parsing
@dataclass
class Table:
    """Parsed columns (Labels, or float arrays where numbers were read as such) and where rows are."""

    columns: dict
    n_rows: int
    locate: object  # row -> "line N"


@contextlib.contextmanager
def system_arrow_pool():
    """Parse with Arrow's system allocator: its default (mimalloc) keeps what it freed, about 2x a list's size.

    The arrays a reader returns outlive the parse; everything else Arrow
    allocated on the way goes back to the system at once.
    """
    if pa is None:  # pragma: no cover
        yield
        return
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def read_table(src: Source, lay: Layout, *, names: list[str], numeric: set[str], width_error) -> Table:
    with system_arrow_pool():
        return _read_table(src, lay, names=names, numeric=numeric, width_error=width_error)


def _read_table(src: Source, lay: Layout, *, names: list[str], numeric: set[str], width_error) -> Table:
    """Parse the rows after the header into columns named ``names``.

    ``numeric`` columns are read as numbers when they all are; otherwise as
    text, for :func:`scores_of` to name the culprit. ``width_error(line, n)``
    words the error for a row of ``n`` cells.
    """
    locate = LineMap(src, lay, quoting=lay.delimiter != WHITESPACE)
    columns = None
    if not (lay.header_line == 0 and src.head(3) == _BOM):
        try:
            columns = _parse(src.stream(), lay, names, numeric, skip=lay.header_line, exact=False)
            if _has_comment_rows(columns, names):
                columns = None
        except _Retry:
            pass
    if columns is None:  # the exact pass: only data lines, line numbers known
        check_text(src, src.data(), whole=True)
        data = locate.filtered()
        if not data:
            return Table({n: Labels(np.zeros(0, np.int64), np.zeros(0, object)) for n in names}, 0, locate)
        for types in (numeric, set()):
            try:
                columns = _parse(io.BytesIO(data), lay, names, types, skip=0, exact=True)
                break
            except _Retry:
                continue
        else:
            raise_width(src, lay, locate, len(names), width_error)
            raise ScoreFileError(f"{src}: cannot be parsed as text delimited by {lay.delimiter!r}; check its "
                                 "quoting (a quote opened and never closed?).")
    if columns.pop(_PADDED, False):  # pandas pads a short row: find it
        last = columns[names[-1]]
        short = (last.codes < 0) if isinstance(last, Labels) else np.isnan(last)
        if short.any():
            raise_width(src, lay, locate, len(names), width_error)
    return Table(columns, len(columns[names[0]]), locate)


_PADDED = "\0padded"  # a key of _parse's result: pandas parsed it (short rows padded)


def _has_comment_rows(columns, names) -> bool:
    first = columns.get(names[0])
    return isinstance(first, Labels) and any(isinstance(u, str) and u.startswith("#") for u in first.uniques)


def _parse(stream, lay: Layout, names, numeric, *, skip: int, exact: bool) -> dict:
    internal = [f"c{k}" for k in range(len(names))]
    spaces = lay.delimiter == WHITESPACE
    if pacsv is not None and ENGINE == "pyarrow" and not (spaces and exact):
        types = {i: (pa.float64() if n in numeric else pa.string()) for i, n in zip(internal, names)}
        # whitespace: single spaces, no quoting, on the fast pass (anything else fails the width check)
        parse = pacsv.ParseOptions(delimiter=" ", quote_char=False) if spaces else \
            pacsv.ParseOptions(delimiter=lay.delimiter, newlines_in_values=exact)
        try:
            table = pacsv.read_csv(
                stream, read_options=pacsv.ReadOptions(skip_rows=skip, column_names=internal),
                parse_options=parse,
                convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=True,
                                                     quoted_strings_can_be_null=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
            if not spaces:
                raise _Retry from None
            stream.seek(0) if hasattr(stream, "seek") else None
            return _parse(stream, lay, names, numeric, skip=skip, exact=True)
        out = {}
        for i, n in zip(internal, names):
            column = table.column(i)
            out[n] = column.to_numpy() if n in numeric else _arrow_labels(column)
            table = table.drop_columns([i])  # free each column once converted
        return out
    sep = dict(sep=r"\s+") if lay.delimiter == WHITESPACE else dict(sep=lay.delimiter)
    try:
        frame = pd.read_csv(stream, header=None, names=internal, skiprows=skip, engine="c", skip_blank_lines=True,
                            dtype={i: (np.float64 if n in numeric else "str") for i, n in zip(internal, names)},
                            keep_default_na=False, na_values={i: [""] for i in internal}, **sep)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError):
        raise _Retry from None
    out = {_PADDED: True}
    for i, n in zip(internal, names):
        values = frame.pop(i)
        if n in numeric:
            out[n] = values.to_numpy(dtype=np.float64)
        elif pa is not None and getattr(values.dtype, "storage", None) == "pyarrow":  # pandas 3: Arrow strings
            out[n] = _arrow_labels(pa.chunked_array(values.array.__arrow_array__()))
        else:
            out[n] = strip_labels(labels_of(values))
    return out


def raise_width(src: Source, lay: Layout, locate: LineMap, width: int, width_error) -> None:
    """Raise ``width_error`` for the first data line whose cell count is not ``width`` (if one is)."""
    data = src.data()
    if lay.delimiter == WHITESPACE or b'"' not in data:
        lines = locate.lines()
        counts = _field_counts(data, lay, lines)
        wrong = np.flatnonzero(counts != width)
        if wrong.size:
            raise ScoreFileError(width_error(int(lines[wrong[0]]), int(counts[wrong[0]])))
        return
    for line, cells in _csv_records(src, lay):
        if len(cells) != width:
            raise ScoreFileError(width_error(line, len(cells)))
