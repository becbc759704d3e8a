"""Video decoding and encoding without a system FFmpeg (decord and PyAV bundle their own).

- Decoding: :func:`probe_video` (metadata), :func:`iter_frames` (streaming, uint8 RGB ``[H, W, 3]``) and
  :func:`read_video` (all frames ``[T, H, W, 3]``). Backend ``"auto"`` uses decord when it is installed
  (fastest on H.264 here) and PyAV otherwise; both convert YUV to RGB with FFmpeg's swscale.
- Encoding: :func:`write_video` writes H.264 (libx264, CRF 18, ``preset=medium``, a fixed thread count, x264's
  CPU-independent arithmetic, bit-exact muxing) into an mp4, atomically. The same frames give a byte-identical file
  on every run and every CPU.
- Clips: :func:`load_clip` reads a clip written by :func:`write_video` (always with PyAV, so the arrays do not
  depend on which optional decoder is installed).

    >>> import numpy as np, tempfile, pathlib
    >>> frames = np.zeros((8, 32, 48, 3), np.uint8)
    >>> path = write_video(pathlib.Path(tempfile.mkdtemp()) / "x.mp4", frames, fps=25)
    >>> load_clip(path).shape
    (8, 32, 48, 3)
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import importlib.util
import os
import platform
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from PIL import Image

from .atomic import atomic_path
from .cv_determinism import SWS_AREA, SWS_BILINEAR, fast_simd, sws_flags
from .errors import DevilError

# Encoder settings of every clip and sample source. CRF 18 is the quality ENVIRONMENT.md's size table uses
# (visually lossless for natural footage); a FIXED thread count keeps x264's output independent of the machine's
# core count (x264 is deterministic for a given thread count), and +bitexact keeps version strings and other
# run-dependent metadata out of the container.
ENCODER_CODEC = "libx264"
ENCODER_CRF = 18
ENCODER_PRESET = "medium"
ENCODER_THREADS = 2
# x264 detects the CPU itself (FFmpeg's av_force_cpu_flags does not reach it) and its AVX-512 / AVX2 / SSE paths
# round differently: the same frames gave other bytes on an AVX-512 machine. ``cpu-independent=1`` is
# x264's own switch for "exact reproducibility across different CPUs": measured, it gives the bytes of
# ``no-asm=1`` under every ``asm=`` setting tried, at the speed of the default (benchmarks/determinism.py).
# ``DEVIL_FAST_SIMD=1`` drops it (x264's CPU-dependent output).
X264_CPU_INDEPENDENT = "cpu-independent=1"
BACKENDS: tuple[str, ...] = ("auto", "decord", "pyav")


@dataclass(frozen=True)
class VideoInfo:
    """Metadata of a video file as the container declares it.

    ``frame_count`` is the declared number of frames (0 when the container does not say); ``fps`` the average
    frame rate as a fraction; ``rotation`` the display-matrix rotation in degrees (0 when none).
    """

    path: str
    width: int
    height: int
    fps: Fraction
    frame_count: int
    codec: str
    rotation: int = 0


def decord_available() -> bool:
    """True when the optional decord decoder can be imported (``pip install devil-dataset[build]``)."""
    return importlib.util.find_spec("decord") is not None


def _resolve_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"unknown video backend {backend!r}; choose one of {BACKENDS}")
    if backend == "auto":
        return "decord" if decord_available() else "pyav"
    return backend


def probe_video(path: str | os.PathLike) -> VideoInfo:
    """Read a video's metadata with PyAV; raise :class:`DevilError` when it is not a readable video.

    >>> import numpy as np, tempfile, pathlib
    >>> p = write_video(pathlib.Path(tempfile.mkdtemp()) / "x.mp4", np.zeros((3, 16, 32, 3), np.uint8), fps=30)
    >>> info = probe_video(p)
    >>> (info.width, info.height, info.fps, info.frame_count)
    (32, 16, Fraction(30, 1), 3)
    """
    import av

    path = Path(path)
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise DevilError(f"{path}: no video stream")
            stream = container.streams.video[0]
            ctx = stream.codec_context
            width, height = int(ctx.width or 0), int(ctx.height or 0)
            if width <= 0 or height <= 0:
                raise DevilError(f"{path}: video stream has no frame size")
            rate = stream.average_rate or stream.base_rate or stream.guessed_rate
            fps = Fraction(rate) if rate else Fraction(0)
            rotation = 0
            try:  # PyAV >= 14 exposes the display matrix through the first decoded frame only; probe cheaply
                for frame in container.decode(stream):
                    rotation = int(round(getattr(frame, "rotation", 0) or 0)) % 360
                    break
            except av.error.FFmpegError:
                pass
            return VideoInfo(str(path), width, height, fps, int(stream.frames or 0), str(ctx.name), rotation)
    except DevilError:
        raise
    except (av.error.FFmpegError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise DevilError(f"{path}: cannot open as a video ({_short(exc, path)})") from None


_DECORD_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\] \S+:\d+: ")


def _short(exc: BaseException, path: Path | None = None) -> str:
    """A deterministic one-line error text: no timestamps (decord adds them), no repeated path."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = _DECORD_PREFIX.sub("", text)
    if path is not None:
        text = text.replace(f": '{path}'", "").replace(str(path), path.name)
    text = re.sub(r"^\[Errno -?\d+\] ", "", text)
    return text[:160]


#: OpenCV's own FFmpeg prints its errors ("moov atom not found", "Invalid NAL unit size") straight to stderr, with
#: no file name; ``OPENCV_FFMPEG_LOGLEVEL`` (read when OpenCV first opens a video) sets their level, -8 = quiet.
OPENCV_FFMPEG_LOGLEVEL_ENV = "OPENCV_FFMPEG_LOGLEVEL"
AV_LOG_QUIET = -8


@contextlib.contextmanager
def quiet_libav() -> Iterator[None]:
    """Keep libav's unattributed lines off the terminal for a block: OpenCV's bundled FFmpeg quiet (unless the user
    set ``OPENCV_FFMPEG_LOGLEVEL``; OpenCV reads it when it opens its first video, so a block that opens one keeps
    it quiet for the process) and PyAV's logging off. The process's environment and PyAV's log level are given back
    on exit. A reader that finds a file damaged says so itself, naming it (:func:`libav_messages` gives libav's
    reasons).

    >>> before = os.environ.get(OPENCV_FFMPEG_LOGLEVEL_ENV)
    >>> with quiet_libav():
    ...     os.environ[OPENCV_FFMPEG_LOGLEVEL_ENV] == str(AV_LOG_QUIET) or "user's"
    True
    >>> os.environ.get(OPENCV_FFMPEG_LOGLEVEL_ENV) == before
    True
    """
    import av.logging

    had = OPENCV_FFMPEG_LOGLEVEL_ENV in os.environ
    level = av.logging.get_level()
    os.environ.setdefault(OPENCV_FFMPEG_LOGLEVEL_ENV, str(AV_LOG_QUIET))
    av.logging.set_level(None)
    try:
        yield
    finally:
        av.logging.set_level(level)
        if not had:
            os.environ.pop(OPENCV_FFMPEG_LOGLEVEL_ENV, None)


def libav_messages(path: str | os.PathLike, limit: int = 5) -> list[str]:
    """libav's own warnings and errors while opening and decoding ``path`` (PyAV, every frame), attributed:
    ``"<path>: libav: <message>"`` (at most ``limit`` distinct ones; an empty list for a clean file). For the note or
    error a reader gives about a file that decoded short or not at all.

    >>> import numpy as np, tempfile, pathlib
    >>> good = write_video(pathlib.Path(tempfile.mkdtemp()) / "ok.mp4", np.zeros((2, 16, 16, 3), np.uint8), fps=5)
    >>> libav_messages(good)
    []
    >>> cut = good.with_name("cut.mp4"); _ = cut.write_bytes(good.read_bytes()[:300])
    >>> libav_messages(cut)[-1]  # doctest: +ELLIPSIS
    '.../cut.mp4: libav: ...'
    """
    import av
    import av.logging

    path = Path(path)
    before, skipped = av.logging.get_level(), av.logging.get_skip_repeated()
    av.logging.set_level(av.logging.WARNING)
    av.logging.set_skip_repeated(False)  # PyAV drops a message seen before in the process: each file gets its own
    failure = None
    try:
        with av.logging.Capture() as logs:
            try:
                with av.open(str(path)) as container:
                    if not container.streams.video:
                        failure = "no video stream"
                    else:
                        for _ in container.decode(video=0):
                            pass
            except (av.error.FFmpegError, OSError, ValueError) as exc:
                failure = _short(exc, path)
    finally:
        av.logging.set_level(before)
        av.logging.set_skip_repeated(skipped)
    lines = list(dict.fromkeys(f"{path}: libav: {m.strip()}" for _, _, m in logs if m.strip()))
    if failure is not None and not any(failure.endswith(line.split(": libav: ", 1)[1]) for line in lines):
        lines.append(f"{path}: libav: {failure}")
    return lines[-limit:]


def iter_frames(
    path: str | os.PathLike,
    *,
    backend: str = "auto",
    size: tuple[int, int] | None = None,
) -> Iterator[np.ndarray]:
    """Yield the frames of a video in presentation order as uint8 RGB ``[H, W, 3]`` arrays.

    ``size=(W, H)`` makes the decoder scale the frames (used by the shot-cut pass; curation keeps native size).
    Decoding errors raise :class:`DevilError` naming the file and the frame index where decoding stopped.

    >>> import numpy as np, tempfile, pathlib
    >>> p = write_video(pathlib.Path(tempfile.mkdtemp()) / "x.mp4", np.zeros((4, 16, 32, 3), np.uint8), fps=25)
    >>> [f.shape for f in iter_frames(p, backend="pyav")]
    [(16, 32, 3), (16, 32, 3), (16, 32, 3), (16, 32, 3)]
    """
    backend = _resolve_backend(backend)
    if backend == "decord":
        frames = _iter_decord(Path(path), size)
        try:
            first = next(frames)
        except StopIteration:
            return
        except (_DecordMisread, DevilError):
            # decord 0.6 returns 4-channel, misaligned rows for frames narrower than 64 px, and fails on some files
            # PyAV reads (or reports more clearly): PyAV decides whenever decord fails before the first frame
            yield from _iter_pyav(Path(path), size)
            return
        yield first
        yield from frames
    else:
        yield from _iter_pyav(Path(path), size)


class _DecordMisread(Exception):
    """decord decoded a frame with the wrong shape (a known decord bug on very narrow videos)."""


def frame_to_rgb(frame, size: tuple[int, int] | None = None) -> np.ndarray:
    """uint8 RGB ``[H, W, 3]`` of a decoded PyAV frame, resized to ``size`` (W, H) with area interpolation if given.

    swscale converts with ``SWS_BITEXACT | SWS_ACCURATE_RND`` (:mod:`devil_dataset.core.cv_determinism`): its SIMD
    YUV -> RGB paths round differently from CPU to CPU (up to 20 levels on a chroma edge); these flags give the same
    bytes on every CPU (``DEVIL_FAST_SIMD=1`` keeps the dispatched path).

    >>> import av
    >>> rgb = av.VideoFrame.from_ndarray(np.full((16, 16, 3), 200, np.uint8), format="rgb24")
    >>> frame = rgb.reformat(format="yuv420p")
    >>> frame_to_rgb(frame).shape, frame_to_rgb(frame, (8, 4)).shape
    ((16, 16, 3), (4, 8, 3))
    """
    if size is None:
        return frame.to_ndarray(format="rgb24", interpolation=sws_flags(SWS_BILINEAR))
    return frame.to_ndarray(format="rgb24", width=size[0], height=size[1], interpolation=sws_flags(SWS_AREA))


def _iter_pyav(path: Path, size: tuple[int, int] | None) -> Iterator[np.ndarray]:
    import av

    index = 0
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise DevilError(f"{path}: no video stream")
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for frame in container.decode(stream):
                yield frame_to_rgb(frame, size)
                index += 1
    except DevilError:
        raise
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise DevilError(f"{path}: decoding failed at frame {index} ({_short(exc, path)})") from None


def _iter_decord(path: Path, size: tuple[int, int] | None) -> Iterator[np.ndarray]:
    import decord

    try:
        kwargs = {} if size is None else {"width": size[0], "height": size[1]}
        reader = decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=0, **kwargs)
    except (decord.DECORDError, RuntimeError, OSError) as exc:
        raise DevilError(f"{path}: cannot open as a video ({_short(exc, path)})") from None
    n = len(reader)
    index = 0
    try:
        while index < n:
            frame = reader.next().asnumpy()
            if frame.ndim != 3 or frame.shape[2] != 3:
                raise _DecordMisread(f"{path}: decord returned shape {frame.shape}")
            yield frame
            index += 1
    except StopIteration:
        return
    except (decord.DECORDError, RuntimeError) as exc:
        raise DevilError(f"{path}: decoding failed at frame {index} ({_short(exc, path)})") from None
    finally:
        del reader


def read_video(
    path: str | os.PathLike,
    *,
    backend: str = "auto",
    start: int = 0,
    count: int | None = None,
) -> np.ndarray:
    """Decode frames ``start .. start+count-1`` (all by default) into uint8 ``[T, H, W, 3]``.

    >>> import numpy as np, tempfile, pathlib
    >>> p = write_video(pathlib.Path(tempfile.mkdtemp()) / "x.mp4", np.zeros((6, 16, 32, 3), np.uint8), fps=25)
    >>> read_video(p, start=2, count=3).shape
    (3, 16, 32, 3)
    """
    frames: list[np.ndarray] = []
    for i, frame in enumerate(iter_frames(path, backend=backend)):
        if i < start:
            continue
        if count is not None and i >= start + count:
            break
        frames.append(frame)
    if not frames:
        raise DevilError(f"{path}: no frames decoded (start={start}, count={count})")
    return np.stack(frames)


@contextlib.contextmanager
def _zeroed_heap() -> Iterator[None]:
    """Make glibc's malloc return zero-filled memory while encoding (no effect elsewhere).

    libx264 (through libavcodec) reads heap memory it never initialised; in a fresh process that memory is zero, but
    after the process has freed large arrays it holds stale data and the H.264 bitstream changes from run to run
    (measured: 854x480 clips differed after rendering in the same process). glibc's ``M_PERTURB`` option with byte
    0xff fills every allocation with 0x00, which makes the output identical to a fresh process's, every time. On other
    C libraries this is a no-op (outputs are then reproducible in fresh processes only).
    """
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_PERTURB, 0xFF)
    try:
        yield
    finally:
        libc.mallopt(_M_PERTURB, 0)


_M_PERTURB = -6  # glibc malloc.h


@functools.lru_cache(maxsize=1)
def _glibc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc if libc.mallopt(_M_PERTURB, 0) == 1 else None
    except (OSError, AttributeError):
        return None


def encode_video_bytes(
    path: str | os.PathLike,
    frames: np.ndarray | Sequence[np.ndarray],
    *,
    fps: float | Fraction,
) -> None:
    """Encode ``frames`` (uint8 RGB ``[T, H, W, 3]``) into H.264 at ``path`` (not atomic; see :func:`write_video`).

    yuv420p (the format every player and decoder reads) when width and height are even, else yuv444p.
    """
    import av

    frames = [np.ascontiguousarray(f) for f in frames]
    if not frames:
        raise ValueError("cannot encode a video with no frames")
    h, w = frames[0].shape[:2]
    for f in frames:
        if f.dtype != np.uint8 or f.ndim != 3 or f.shape != (h, w, 3):
            raise ValueError(f"frames must all be uint8 [H, W, 3] of shape {(h, w, 3)}, got {f.dtype} {f.shape}")
    rate = _as_fraction(fps)
    with _zeroed_heap(), av.open(str(path), "w", format="mp4", options={"fflags": "+bitexact"}) as container:
        stream = container.add_stream(ENCODER_CODEC, rate=rate)
        stream.width, stream.height = w, h
        stream.pix_fmt = "yuv420p" if (w % 2 == 0 and h % 2 == 0) else "yuv444p"
        stream.options = encoder_options()
        for f in frames:
            yuv = av.VideoFrame.from_ndarray(f, format="rgb24").reformat(
                format=stream.pix_fmt, interpolation=sws_flags(SWS_BILINEAR))  # CPU-independent RGB -> YUV
            for packet in stream.encode(yuv):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def x264_params() -> str:
    """The ``x264-params`` of every encode: :data:`X264_CPU_INDEPENDENT` unless ``DEVIL_FAST_SIMD=1`` (then none).

    >>> x264_params() == ("" if fast_simd() else "cpu-independent=1")
    True
    """
    return "" if fast_simd() else X264_CPU_INDEPENDENT


def encoder_options() -> dict[str, str]:
    """libx264's options for :func:`encode_video_bytes` (CRF, preset, thread count, CPU-independent arithmetic).

    >>> encoder_options()["crf"], encoder_options()["threads"]
    ('18', '2')
    """
    options = {"crf": str(ENCODER_CRF), "preset": ENCODER_PRESET, "threads": str(ENCODER_THREADS)}
    params = x264_params()
    if params:
        options["x264-params"] = params
    return options


def _as_fraction(fps: float | Fraction) -> Fraction:
    if isinstance(fps, Fraction):
        rate = fps
    else:
        rate = Fraction(fps).limit_denominator(1001)
    if rate <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    return rate


def write_video(
    path: str | os.PathLike,
    frames: np.ndarray | Sequence[np.ndarray],
    *,
    fps: float | Fraction,
) -> Path:
    """Atomically write ``frames`` as an H.264 mp4 (CRF 18, deterministic settings) and return the path.

    >>> import numpy as np, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> f = np.full((5, 32, 48, 3), 120, np.uint8)
    >>> write_video(d / "a.mp4", f, fps=25).read_bytes() == write_video(d / "b.mp4", f, fps=25).read_bytes()
    True
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        # the muxer picks the format from the name; the temporary name keeps the .mp4 suffix
        tmp_mp4 = tmp.with_name(tmp.name + ".mp4")
        try:
            encode_video_bytes(tmp_mp4, frames, fps=fps)
            os.replace(tmp_mp4, tmp)
        finally:
            if tmp_mp4.exists():
                tmp_mp4.unlink()
    return path


def load_clip(path: str | os.PathLike) -> np.ndarray:
    """Decode a stored clip (an mp4 written by :func:`write_video`) into uint8 ``[T, H, W, 3]``.

    Always decodes with PyAV (single-threaded, swscale RGB conversion), so the same file gives identical arrays on
    every call and every machine with the same PyAV build. A directory of ``*.jpg``/``*.png`` frames (the
    original release's layout) is read in name order with Pillow.

    >>> import numpy as np, tempfile, pathlib
    >>> p = write_video(pathlib.Path(tempfile.mkdtemp()) / "c.mp4", np.full((3, 16, 16, 3), 7, np.uint8), fps=25)
    >>> clip = load_clip(p)
    >>> clip.dtype, clip.shape
    (dtype('uint8'), (3, 16, 16, 3))
    """
    path = Path(path)
    if path.is_dir():

        files = sorted(p for p in path.iterdir() if p.suffix.lower() in {".jpg", ".jpeg", ".png"})
        if not files:
            raise DevilError(f"{path}: no .jpg/.png frames in the directory")
        return np.stack([np.asarray(Image.open(p).convert("RGB")) for p in files])
    if not path.is_file():
        raise DevilError(f"{path}: no such clip file")
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"
            frames = [frame_to_rgb(frame) for frame in container.decode(stream)]
    except (av.error.FFmpegError, IndexError, OSError) as exc:
        raise DevilError(f"{path}: cannot decode clip ({_short(exc, path)})") from None
    if not frames:
        raise DevilError(f"{path}: clip has no frames")
    return np.stack(frames)
