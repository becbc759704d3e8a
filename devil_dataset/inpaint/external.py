"""Plug in an external inpainting method: a command run once per clip, or a Python callable.

**Command template.** For each clip the runner writes the release's method-input layout into a fresh temporary
``{input_dir}``: ``frame_%04d_gt.png`` (RGB) and ``frame_%04d_mask.png`` (mode '1', 1/white = known, 0/black =
hole), runs the command, and reads ``frame_%04d_pred.png`` (RGB, same count and size as the input) from the
empty ``{output_dir}`` it created. Placeholders: ``{input_dir}``, ``{output_dir}``, ``{clip_id}``,
``{num_frames}``, ``{width}``, ``{height}``; other braces are left alone. The template is split like a shell
line (``shlex``) and run without a shell; wrap it in ``bash -c '...'`` for pipes or redirections.

**Hole pixels.** A method must never read hole pixels. The release handed methods the ground-truth frames, hole
included; by default we write those pixels as black (``hole_pixels="zero"``), which changes nothing for an
honest method and makes accidental leaks impossible. ``hole_pixels="gt"`` writes the release's exact inputs.

**Size divisor.** With ``size_divisor`` the inputs are mirror-padded as the release did
(:mod:`.padding`) and the method must return frames of the padded size; they are cropped back.

**Callable.** ``module:function`` (a dotted module or a ``path/to/file.py``) naming an inpainter
``fn(frames uint8 [T, H, W, 3], hole bool [T, H, W]) -> uint8 [T, H, W, 3]``; the same hole-pixel and padding
rules apply.

    >>> import sys
    >>> inpaint = command_inpainter(f"{sys.executable} -c 'import sys' {{input_dir}} {{output_dir}}")
    >>> inpaint.template.split()[-1]
    '{output_dir}'
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..core.atomic import file_sha256
from ..core.errors import DevilError
from ..core.release_format import list_frames, read_frame_pngs, write_frame_pngs, write_mask_pngs
from .contract import Inpainter
from .padding import crop_padding, pad_to_multiple
from .spatial import blank_hole

# How hole pixels of the input frames reach an external method (see the module docstring).
HOLE_PIXELS: tuple[str, ...] = ("zero", "gt")
PLACEHOLDERS: tuple[str, ...] = ("input_dir", "output_dir", "clip_id", "num_frames", "width", "height")
# Characters of the method's stderr/stdout quoted in an error message.
ERROR_TAIL_CHARS = 2000
_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def _check_hole_pixels(hole_pixels: str) -> None:
    if hole_pixels not in HOLE_PIXELS:
        raise ValueError(f"hole_pixels must be one of {', '.join(HOLE_PIXELS)}, got {hole_pixels!r}")


def _method_input(frames: np.ndarray, hole: np.ndarray, hole_pixels: str) -> np.ndarray:
    return blank_hole(frames, hole) if hole_pixels == "zero" else frames


def fill_template(template: str, fields: dict[str, object]) -> list[str]:
    """Split a command template into arguments and substitute the known ``{placeholders}`` in each.

    >>> fill_template("run.py --in {input_dir} --n={num_frames} '{x}'", {"input_dir": "/a b", "num_frames": 3})
    ['run.py', '--in', '/a b', '--n=3', '{x}']
    """
    try:
        tokens = shlex.split(template)
    except ValueError as exc:
        raise DevilError(f"--command: cannot parse the template ({exc})") from None
    if not tokens:
        raise DevilError("--command: the template is empty")
    return [_PLACEHOLDER_RE.sub(lambda m: str(fields[m.group(1)]) if m.group(1) in fields else m.group(0), tok)
            for tok in tokens]


# Seconds a timed-out or interrupted command's process group gets after SIGTERM before SIGKILL.
KILL_GRACE_S = 2.0


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the command's whole process group, SIGKILL it after :data:`KILL_GRACE_S`, reap the leader."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:
                try:  # the leader is gone; children that ignored SIGTERM still get SIGKILL
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            break
        except subprocess.TimeoutExpired:
            continue
    proc.poll()


def run_command(args: list[str], *, timeout: float | None, log_dir: Path) -> tuple[int, str]:
    """Run ``args`` in a new session (its own process group); return (exit code, stderr or stdout tail).

    On timeout (``subprocess.TimeoutExpired``) or any interruption (Ctrl-C's ``KeyboardInterrupt``) the
    whole process group is terminated, children included, and the exception propagates. Output goes to files
    in ``log_dir``, so a child that keeps the output open cannot block the wait.

        >>> import sys, tempfile, pathlib
        >>> run_command([sys.executable, "-c", "print('hi')"], timeout=30, log_dir=pathlib.Path(tempfile.mkdtemp()))
        (0, 'hi')
    """
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except BaseException:
            _kill_group(proc)
            raise
        try:  # the leader exited: children it left behind in its group would outlive the clip
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    text = err_path.read_text(errors="replace") or out_path.read_text(errors="replace")
    return code, _tail(text)


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= ERROR_TAIL_CHARS else "..." + text[-ERROR_TAIL_CHARS:]


@dataclass
class CommandInpainter:
    """An inpainter that runs ``template`` once per clip on the release's file layout (module docstring).

    Call it as ``inpainter(frames, hole, clip_id="name")``; failures raise :class:`DevilError` naming the clip.
    """

    template: str
    hole_pixels: str = "zero"
    size_divisor: int | None = None
    timeout: float | None = None
    # run.py passes the clip id to inpainters that set this (used in messages and the {clip_id} placeholder).
    wants_clip_id: bool = True

    def __post_init__(self) -> None:
        _check_hole_pixels(self.hole_pixels)
        if "{output_dir}" not in self.template:
            raise DevilError("--command: the template must contain {output_dir} (where the method writes "
                             f"frame_%04d_pred.png): {self.template!r}")

    def __call__(self, frames: np.ndarray, hole: np.ndarray, clip_id: str = "clip") -> np.ndarray:
        info = None
        if self.size_divisor and self.size_divisor > 1:
            frames, hole, info = pad_to_multiple(frames, hole, self.size_divisor)
        num_frames, height, width = hole.shape
        with tempfile.TemporaryDirectory(prefix="devil-inpaint-") as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            output_dir.mkdir(parents=True)
            (Path(tmp) / "log").mkdir()
            write_frame_pngs(_method_input(frames, hole, self.hole_pixels), input_dir, "gt")
            write_mask_pngs(hole, input_dir)
            fields = {"input_dir": input_dir, "output_dir": output_dir, "clip_id": clip_id,
                      "num_frames": num_frames, "width": width, "height": height}
            args = fill_template(self.template, fields)
            try:
                code, tail = run_command(args, timeout=self.timeout, log_dir=Path(tmp) / "log")
            except FileNotFoundError:
                raise DevilError(f"clip {clip_id}: command not found: {args[0]!r}") from None
            except subprocess.TimeoutExpired:
                raise DevilError(
                    f"clip {clip_id}: command timed out after {self.timeout} s (its process group was killed): "
                    f"{shlex.join(args)}"
                ) from None
            if code != 0:
                raise DevilError(f"clip {clip_id}: command failed with exit code {code}: {shlex.join(args)}\n{tail}")
            try:
                found = list_frames(output_dir, "pred")
            except DevilError as exc:
                raise DevilError(f"clip {clip_id}: bad output in {{output_dir}}: {exc}") from None
            if len(found) != num_frames:
                raise DevilError(
                    f"clip {clip_id}: the command wrote {len(found)} frame_%04d_pred.png files into {{output_dir}}, "
                    f"expected {num_frames}"
                )
            pred = read_frame_pngs(output_dir, "pred")
        if pred.shape != frames.shape:
            raise DevilError(
                f"clip {clip_id}: the command wrote {pred.shape[2]}x{pred.shape[1]} predictions, "
                f"expected {width}x{height} (the size of the input frames)"
            )
        return np.ascontiguousarray(crop_padding(pred, info)) if info is not None else pred


def command_inpainter(
    template: str, *, hole_pixels: str = "zero", size_divisor: int | None = None, timeout: float | None = None
) -> CommandInpainter:
    """An inpainter that runs a shell-style command template per clip (see the module docstring)."""
    return CommandInpainter(template, hole_pixels, size_divisor, timeout)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# The first bytes of a compiled executable (ELF, Mach-O 32/64 both byte orders): a command's interpreter or
# program binary is not part of the method's identity (a new Python build would redo every clip), its scripts are.
BINARY_MAGICS = (b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe")


def _is_binary_executable(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) in BINARY_MAGICS


def command_identity(template: str) -> dict:
    """What a command method is: its template and the SHA-256 of every file it names (a script, a config, weights:
    any whole argument, or the value of ``--opt=value``, that is an existing file, binary executables excepted),
    with ``identity``, a short hash of the lot. Editing the script changes the identity, so stored work is redone.

    >>> import tempfile
    >>> script = Path(tempfile.mkdtemp()) / "m.py"; _ = script.write_text("print(1)")
    >>> a = command_identity(f"python {script} {{output_dir}}")
    >>> _ = script.write_text("print(2)")
    >>> b = command_identity(f"python {script} {{output_dir}}")
    >>> a["identity"] != b["identity"], list(a["files"]) == [str(script)]
    (True, True)
    """
    files: dict[str, str] = {}
    try:
        tokens = shlex.split(template)
    except ValueError:
        tokens = template.split()
    for token in tokens:
        for candidate in dict.fromkeys((token, token.partition("=")[2])):
            if not candidate or "{" in candidate:
                continue
            path = Path(candidate)
            try:
                if path.is_file() and not _is_binary_executable(path):
                    files[candidate] = file_sha256(path)  # streamed: a named weights file may be large
            except OSError:  # unreadable: not part of the identity (the command itself will say)
                continue
    record = {"kind": "command", "command": template, "files": files}
    return {**record, "identity": _sha256(json.dumps(record, sort_keys=True).encode())[:16]}


def callable_identity(fn: Callable | str) -> dict:
    """What a callable method is: its ``module:function`` (or qualified name) and the SHA-256 of the source file of
    the module that defines it (the whole file, so an edit of a helper function in it counts too; the function's
    own source when the file cannot be read), with ``identity``, a short hash of the lot.

    >>> callable_identity("json:dumps")["callable"], len(callable_identity("json:dumps")["identity"])
    ('json:dumps', 16)
    """
    target = load_callable(fn) if isinstance(fn, str) else fn
    target = inspect.unwrap(getattr(target, "func", target))  # functools.partial, decorators
    if not (inspect.isfunction(target) or inspect.ismethod(target) or inspect.isclass(target)):
        target = type(target)  # a callable object: its class
    name = fn if isinstance(fn, str) else f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', '?')}"
    source: dict[str, str] = {}
    try:
        file = inspect.getsourcefile(target)
        if file is not None:
            source[Path(file).name] = file_sha256(file)
    except (OSError, TypeError):
        pass
    if not source:
        try:
            source["<function source>"] = _sha256(inspect.getsource(target).encode())
        except (OSError, TypeError):  # no source (a builtin): its name only
            pass
    record = {"kind": "callable", "callable": name, "source": source}
    return {**record, "identity": _sha256(json.dumps(record, sort_keys=True).encode())[:16]}


def load_callable(spec: str) -> Callable:
    """Import ``module:function`` or ``path/to/file.py:function`` and return the function."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise DevilError(f"--callable: expected module:function or path/to/file.py:function, got {spec!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise DevilError(f"{path}: no such file (from --callable {spec!r})")
            name = f"devil_external_{abs(hash(str(path.resolve())))}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None  # a .py file: a source loader
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except DevilError:
        raise
    except Exception as exc:  # an import error in the user's module: report it with the spec
        raise DevilError(f"--callable {spec!r}: cannot import {module_name} ({type(exc).__name__}: {exc})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise DevilError(f"--callable {spec!r}: {module_name} has no callable {attr!r}")
    return fn


@dataclass
class CallableInpainter:
    """A user function wrapped with the hole-pixel and padding rules (see :func:`callable_inpainter`).

    Picklable, so worker processes can run it: a ``module:function`` spec is imported again in each worker on first
    use, a function object is pickled by reference (a module-level function).
    """

    fn: Callable | str
    hole_pixels: str = "zero"
    size_divisor: int | None = None

    def __post_init__(self) -> None:
        _check_hole_pixels(self.hole_pixels)
        self._fn: Callable | None = self.fn if callable(self.fn) else load_callable(self.fn)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if isinstance(self.fn, str):
            state["_fn"] = None  # a function loaded from a file is re-imported in the worker
        return state

    def __call__(self, frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
        if self._fn is None:
            self._fn = load_callable(str(self.fn))
        info = None
        if self.size_divisor and self.size_divisor > 1:
            frames, hole, info = pad_to_multiple(frames, hole, self.size_divisor)
        pred = np.asarray(self._fn(_method_input(frames, hole, self.hole_pixels), hole.copy()))
        return np.ascontiguousarray(crop_padding(pred, info)) if info is not None else pred


def callable_inpainter(
    fn: Callable | str, *, hole_pixels: str = "zero", size_divisor: int | None = None
) -> Inpainter:
    """Wrap a user function (or a ``module:function`` string) as an inpainter with the hole-pixel and padding rules.

    >>> import numpy as np
    >>> inpaint = callable_inpainter(lambda frames, hole: frames)
    >>> frames = np.full((1, 4, 4, 3), 7, np.uint8); hole = np.zeros((1, 4, 4), bool); hole[0, 0, 0] = True
    >>> int(inpaint(frames, hole)[0, 0, 0, 0])  # the function saw the hole pixel as 0
    0
    """
    return CallableInpainter(fn, hole_pixels, size_divisor)
