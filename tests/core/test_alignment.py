"""Features, exact cross-checked matching, similarity RANSAC and the mask warp (the release's alignment)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from devil_dataset.core import alignment as al
from devil_dataset.core.int8_products import int8_status


def _texture(seed: int = 0, size: tuple[int, int] = (320, 240)) -> np.ndarray:
    """A smooth random texture (blurred noise at two scales): many SIFT/ORB features."""
    w, h = size
    rng = np.random.default_rng(seed)
    coarse = cv2.resize(rng.random((h // 8, w // 8, 3), dtype=np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    fine = cv2.GaussianBlur(rng.random((h, w, 3), dtype=np.float32), (0, 0), 1.2)
    img = 0.6 * coarse + 0.8 * fine
    return np.clip((img - img.min()) / (img.max() - img.min()) * 255, 0, 255).astype(np.uint8)


def _cv2_matches(source: al.Features, target: al.Features) -> np.ndarray:
    norm = cv2.NORM_HAMMING if source.detector == "orb" else cv2.NORM_L2
    ms = cv2.BFMatcher(norm, crossCheck=True).match(target.descriptors, source.descriptors)
    return np.array([(m.trainIdx, m.queryIdx) for m in ms], np.int64).reshape(-1, 2)


@pytest.mark.parametrize("detector", ["sift", "orb"])
def test_recovers_known_similarity(detector):
    img = _texture(1, (400, 300))
    truth = cv2.getRotationMatrix2D((200, 150), 4.0, 1.05)
    truth[:, 2] += (7.0, -5.0)
    moved = cv2.warpAffine(img, truth, (400, 300), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    m = al.estimate_similarity(al.detect_features(img, detector), al.detect_features(moved, detector))
    assert m is not None
    assert np.allclose(m[:, :2], truth[:, :2], atol=0.01)
    assert np.allclose(m[:, 2], truth[:, 2], atol=1.5)


@pytest.mark.parametrize("detector", ["sift", "orb"])
def test_exact_matching_equals_opencv_bfmatcher(detector):
    a = _texture(2)
    b = np.roll(cv2.GaussianBlur(a, (3, 3), 0), (3, -4), axis=(0, 1))
    fa, fb = al.detect_features(a, detector), al.detect_features(b, detector)
    assert len(fa) > 50 and len(fb) > 50
    for s, t in ((fa, fb), (fb, fa), (fa, fa)):
        assert np.array_equal(al.match_features(s, t), _cv2_matches(s, t))
    # the reversed pair's matches are the same rows in OpenCV's order for the other direction
    assert np.array_equal(al.reverse_matches(al.match_features(fa, fb)), _cv2_matches(fb, fa))


def test_exact_matching_tie_breaks_like_opencv():
    """Duplicate descriptors (exact ties both ways): OpenCV keeps the first minimum on each side."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 60, (40, 128)).astype(np.float32)
    train = np.concatenate([base, base[:10], base[5:15]])  # duplicated rows -> exact distance ties
    query = np.concatenate([base[::-1], base[:7]]) + (rng.random((47, 128)) < 0.02)
    s = al.Features(np.zeros((len(train), 2), np.float32), train, "sift")
    t = al.Features(np.zeros((len(query), 2), np.float32), query.astype(np.float32), "sift")
    assert np.array_equal(al.match_features(s, t), _cv2_matches(s, t))
    bits = rng.integers(0, 256, (30, 32)).astype(np.uint8)
    sb = al.Features(np.zeros((60, 2), np.float32), np.concatenate([bits, bits]), "orb")
    tb = al.Features(np.zeros((35, 2), np.float32), np.concatenate([bits[::-1], bits[:5] ^ 1]), "orb")
    assert np.array_equal(al.match_features(sb, tb), _cv2_matches(sb, tb))


def _per_pair_cross_check(query: np.ndarray, train: np.ndarray) -> np.ndarray:
    """The cross-check as the matcher formerly computed it: float64 squared distances, numpy's first argmin
    along each axis (the reference the new product form must equal)."""
    q, t = query.astype(np.float64), train.astype(np.float64)
    d = (q * q).sum(1)[:, None] + (t * t).sum(1)[None, :] - 2.0 * q @ t.T
    best_train, best_query = d.argmin(axis=1), d.argmin(axis=0)
    keep = np.nonzero(best_query[best_train] == np.arange(len(q)))[0]
    return np.stack([best_train[keep], keep], axis=1).astype(np.int64)


def _product_matches(query: np.ndarray, train: np.ndarray, *, binary: bool, int8: bool = True) -> np.ndarray | None:
    """The exact matcher on raw descriptor arrays, as ``match_features`` runs it on two frames' operands (with the
    int8 form where this process takes it, unless ``int8=False``)."""
    q = al.exact_operands(query, binary=binary, int8=int8)
    t = al.exact_operands(train, binary=binary, int8=int8)
    if q is not None and t is not None:
        assert (q.int8 is not None) == (t.int8 is not None) == (int8 and int8_status()[0])
    return None if q is None or t is None else al.exact_cross_check(q, t)


def _forms() -> list:
    """The matcher's two product forms; the int8 one where this process computes its products exactly."""
    return [pytest.param(False, id="float32"),
            pytest.param(True, id="int8", marks=pytest.mark.skipif(not int8_status()[0], reason=int8_status()[1]))]


@pytest.mark.parametrize("int8", _forms())
def test_product_matcher_equals_the_per_pair_cross_check_on_random_integer_descriptors(int8):
    """Random integer descriptors of every size across block edges, few distinct values (many exact ties)
    and duplicated rows, and bytes up to 255: the same matches as the exact reference, in the same order, with
    either product form."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        nq, nt = int(rng.integers(1, 600)), int(rng.integers(1, 600))
        dim = int(rng.choice([3, 16, 128]))
        top = int(rng.choice([2, 5, 40] + [256] * (dim <= 16)))  # 128 bytes up to 255 pass the float32 bound
        query = rng.integers(0, top, (nq, dim)).astype(np.float32)
        train = rng.integers(0, top, (nt, dim)).astype(np.float32)
        if trial % 2:
            train[: nt // 2] = query[rng.integers(0, nq, nt // 2)]  # exact duplicates across the two sets
        got = _product_matches(query, train, binary=False, int8=int8)
        assert got is not None and np.array_equal(got, _per_pair_cross_check(query, train)), trial
    bits = rng.integers(0, 256, (300, 32)).astype(np.uint8)
    got = _product_matches(bits[:290], bits[10:], binary=True, int8=int8)
    unpacked = np.unpackbits(bits, axis=1)
    assert np.array_equal(got, _per_pair_cross_check(unpacked[:290], unpacked[10:]))


@pytest.mark.parametrize("int8", _forms())
def test_product_matcher_leaves_a_query_that_ties_an_earlier_rows_column_minimum(int8):
    """An earlier query row at the same column minimum wins the column even when its own best train is another column
    (the case the matcher's in-block gather decides): query 1's best is train 0, but query 0 reaches train 0's minimum
    first, so only query 0 is matched (to train 1), as OpenCV's cross-check; also across a block edge."""
    for gap in (0, 300):  # the two queries in one block, then in two blocks (filler rows far away in between)
        query = np.array([[0, 0]] + [[90, 90]] * gap + [[2, 0]], np.float32)
        train = np.array([[1, 0], [0, 0]], np.float32)
        got = _product_matches(query, train, binary=False, int8=int8)
        source = al.Features(np.zeros((2, 2), np.float32), train, "sift")
        target = al.Features(np.zeros((len(query), 2), np.float32), query, "sift")
        assert got is not None and got.tolist() == [[1, 0]] == _cv2_matches(source, target).tolist(), gap


def test_the_two_product_forms_give_the_same_matches_on_real_features():
    """SIFT features of two real-looking frames: the int8 form, the float32 form and one frame in each form (the
    float32 product then) give the same matches."""
    a = _texture(5, (400, 300))
    b = np.roll(cv2.GaussianBlur(a, (3, 3), 0), (2, 5), axis=(0, 1))
    fa, fb = al.detect_features(a, "sift"), al.detect_features(b, "sift")
    forms = {int8: (al.exact_operands(fa.descriptors, binary=False, int8=int8),
                    al.exact_operands(fb.descriptors, binary=False, int8=int8)) for int8 in (False, True)}
    want = al.exact_cross_check(forms[False][1], forms[False][0])
    assert len(want) > 50 and np.array_equal(want, _cv2_matches(fa, fb))
    assert np.array_equal(al.exact_cross_check(forms[True][1], forms[True][0]), want)
    assert np.array_equal(al.exact_cross_check(forms[True][1], forms[False][0]), want)


def test_non_integer_descriptors_fall_back_to_opencv():
    rng = np.random.default_rng(4)
    s = al.Features(np.zeros((50, 2), np.float32), rng.random((50, 64), dtype=np.float32), "sift")
    t = al.Features(np.zeros((40, 2), np.float32), rng.random((40, 64), dtype=np.float32), "sift")
    assert al.exact_operands(t.descriptors, binary=False) is None
    assert np.array_equal(al.match_features(s, t), _cv2_matches(s, t))


def test_featureless_frame_fails_alignment():
    flat = np.full((120, 160, 3), 128, np.uint8)
    f = al.detect_features(flat, "sift")
    assert len(f) == 0 and f.descriptors is None
    assert al.estimate_similarity(f, al.detect_features(_texture(), "sift")) is None
    assert al.match_features(f, f).shape == (0, 2)


def test_fewer_than_two_matches_fails():
    one = al.Features(np.array([[5.0, 5.0]], np.float32), np.ones((1, 128), np.float32), "sift")
    assert al.similarity_from_matches(one, one, np.array([[0, 0]])) is None


def test_mask_keeps_keypoints_on_background_only():
    img = _texture(5)
    keep = np.zeros(img.shape[:2], bool)
    keep[:, :160] = True
    f = al.detect_features(img, "sift", mask=keep)
    assert len(f) > 10 and (f.points[:, 0] < 160).all()


def test_warp_valid_mask():
    assert al.warp_valid_mask(np.eye(2, 3), (64, 48)).all()
    shift = np.array([[1.0, 0.0, 10.0], [0.0, 1.0, 0.0]])
    valid = al.warp_valid_mask(shift, (64, 48))
    assert not valid[:, :10].any() and valid[:, 10:].all()
    # sub-pixel shift: the bilinear edge column is < 1 and therefore invalid
    valid = al.warp_valid_mask(np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]), (64, 48))
    assert not valid[:, 0].any() and valid[:, 1:].all()


def test_warp_frame_translates():
    img = _texture(6, (64, 48))
    out = al.warp_frame(img, np.array([[1.0, 0.0, 3.0], [0.0, 1.0, 2.0]]))
    assert np.array_equal(out[2:, 3:], img[:-2, :-3]) and not out[:2].any()


def test_detector_resolution():
    assert al.resolve_detector("orb") == "orb"
    assert al.default_detector() == ("surf" if al.surf_available() else "sift")
    with pytest.raises(ValueError, match="unknown detector"):
        al.resolve_detector("akaze")
    if not al.surf_available():
        with pytest.raises(ValueError, match="OPENCV_ENABLE_NONFREE"):
            al.resolve_detector("surf")
    with pytest.raises(ValueError, match="uint8 RGB"):
        al.detect_features(np.zeros((10, 10), np.uint8), "sift")


@pytest.mark.parametrize("detector", ["sift", "orb"])
def test_keypoint_positions_are_opencvs_float32_points(detector):
    """``detect_features`` converts the keypoints with OpenCV's ``KeyPoint.convert``: the same float32 values as
    reading ``kp.pt`` of each keypoint."""
    img = _texture(3, (200, 150))
    features = al.detect_features(img, detector)
    keypoints, _ = al._create(detector).detectAndCompute(img, None)
    assert len(features) == len(keypoints) > 0
    want = np.array([kp.pt for kp in keypoints], np.float32).reshape(-1, 2)
    assert features.points.dtype == np.float32 and np.array_equal(features.points, want)
    flat = al.detect_features(np.zeros((64, 64, 3), np.uint8), detector)
    assert flat.points.shape == (0, 2) and flat.points.dtype == np.float32


def test_refinement_sums_are_the_correctly_rounded_sums_of_the_arrays():
    """``refine_similarity`` gives the bits of the closed form with ``math.fsum`` over the arrays themselves (its
    sums now go through Python lists: faster, the same values), on inputs whose naive float sums differ."""
    import math

    def reference(src, dst, inliers, initial):
        p, q = np.asarray(src, np.float64)[inliers], np.asarray(dst, np.float64)[inliers]
        n = len(p)
        px, py, qx, qy = p[:, 0], p[:, 1], q[:, 0], q[:, 1]
        mpx, mpy, mqx, mqy = (math.fsum(v) / n for v in (px, py, qx, qy))
        cpx, cpy, cqx, cqy = px - mpx, py - mpy, qx - mqx, qy - mqy
        norm = math.fsum(np.concatenate([cpx * cpx, cpy * cpy]))
        a = math.fsum(np.concatenate([cpx * cqx, cpy * cqy])) / norm
        b = math.fsum(np.concatenate([cpx * cqy, -(cpy * cqx)])) / norm
        return np.array([[a, -b, mqx - (a * mpx - b * mpy)], [b, a, mqy - (b * mpx + a * mpy)]])

    rng = np.random.default_rng(11)
    naive_differs = 0
    for trial in range(40):
        n = int(rng.integers(3, 3000))
        src = (rng.random((n, 2)) * (854, 480)).astype(np.float32)
        theta, scale = rng.normal(0, 0.05), 1 + rng.normal(0, 0.02)
        rot = scale * np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        dst = (src @ rot.T + rng.normal(0, 10, 2) + rng.normal(0, 0.7, (n, 2))).astype(np.float32)
        inliers = rng.random(n) > 0.2
        got = al.refine_similarity(src, dst, inliers, np.zeros((2, 3)))
        assert np.array_equal(got, reference(src, dst, inliers, np.zeros((2, 3)))), trial
        p = np.asarray(src, np.float64)[inliers]
        centred = (p - p.mean(axis=0)).ravel()
        naive_differs += float(np.sum(centred * centred)) != math.fsum((centred * centred).tolist())
    assert naive_differs > 0  # the inputs are ones where the order of the products' sum matters
