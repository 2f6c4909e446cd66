"""simpleHash (reference §1.5): `${len}_${djb2(5381)}_${djb2(52711)}` over UTF-16 code units, base 36."""

import random

import pytest

from dle_desktop.core.hashing import simple_hash, simple_hash_reference


def _js_simple_hash(text: str) -> str:
    """Written from the reference, independently of the module under test."""
    data = text.encode("utf-16-le", errors="surrogatepass")
    units = [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]

    def djb2(h):
        for u in units:
            h = (h * 33 + u) % 2**32
        return h

    def b36(n):
        s = ""
        while True:
            n, r = divmod(n, 36)
            s = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + s
            if n == 0:
                return s

    return f"{len(units)}_{b36(djb2(5381))}_{b36(djb2(52711))}"


def test_empty_string_by_hand():
    # 5381 = 4*36^2 + 5*36 + 17 → "45h"; 52711 = 1*36^3 + 4*36^2 + 24*36 + 7 → "14o7"
    assert simple_hash("") == "0_45h_14o7"


def test_one_char_by_hand():
    # 'a' = 97: 5381*33+97 = 177670 ; 52711*33+97 = 1739560
    def b36(n):
        out = ""
        while n:
            n, r = divmod(n, 36)
            out = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + out
        return out

    assert simple_hash("a") == f"1_{b36(177670)}_{b36(1739560)}"


def test_astral_char_counts_two_utf16_units():
    assert simple_hash("\U0001f409").startswith("2_")
    assert simple_hash("a\U0001f409b").startswith("4_")


def _random_text(rng: random.Random, n: int) -> str:
    pools = [
        (0x20, 0x7E),
        (0xA0, 0x24F),
        (0x400, 0x4FF),
        (0x590, 0x6FF),
        (0x4E00, 0x9FFF),
        (0x300, 0x36F),
        (0x1F300, 0x1FAFF),
        (0x10000, 0x10FFFF),
    ]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(pools)
        cp = rng.randint(lo, hi)
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0x41
        out.append(chr(cp))
    return "".join(out)


def test_fast_equals_reference_on_random_texts():
    rng = random.Random(1234)
    for _ in range(300):
        text = _random_text(rng, rng.randint(0, 300))
        expected = simple_hash_reference(text)
        assert simple_hash(text) == expected
        assert expected == _js_simple_hash(text)


def test_fast_equals_reference_on_long_texts_both_orders():
    # the power table grows on demand; a long hash then a short one must both be right
    rng = random.Random(99)
    long = _random_text(rng, 50_000)
    short = _random_text(rng, 17)
    assert simple_hash(long) == simple_hash_reference(long)
    assert simple_hash(short) == simple_hash_reference(short)
    longer = long + _random_text(rng, 70_000)
    assert simple_hash(longer) == simple_hash_reference(longer)


@pytest.mark.parametrize(
    "text",
    [
        "a\ud800b",
        "\udfff",
        "\r\n",
        "\ufeffbom",
        "\u0000nul",
        "e\u0301",
        "\u05e9\u05dc\u05d5\u05dd",
        "\u4e2d\u6587" * 100,
    ],
)
def test_special_texts(text):
    assert simple_hash(text) == _js_simple_hash(text)


def test_different_texts_differ():
    assert simple_hash("Gorduin") != simple_hash("gorduin")
    assert simple_hash("ab") != simple_hash("ba")
