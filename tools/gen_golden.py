#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the SGFP4 golden set: golden/manifest.json, golden/decode/*, golden/reject/*, and
the matrix-vector product vectors golden/matvec/* (their own manifest.json).

This is the INDEPENDENT generator of the conformance vectors. It uses the Python standard
library only and never calls libsgfp4 or the sgfp4 CLI: every container is written here from
intended values (layout, split tree, modes, fp16 scale and bias bits, code symbols), and the
expected float32 tensor of a must-decode vector is computed from those intended values:

    w = fl32(S * q + B)

where S = half(scale bits), B = half(bias bits) (v2: bias bits & 0xFFF0, DECISIONS D1/D3),
q = the code value of the intended symbol (DECISIONS D4). S * q + B is exact in double (at
most ~43 significant bits), so rounding it once to binary32 with struct.pack('<f') gives the
correctly rounded (nearest-even) float32 of D1. half -> double is an exact formula (ldexp).

Must-reject vectors each start from a valid container and break exactly one acceptance rule
(DECISIONS D2); the expected status is the sgfp4_status_name() of that rule.

Matvec vectors (golden/matvec/manifest.json) pair a container (a must-decode vector's, or one
of their own) with activations and the expected product bytes, computed here from the same
intended values by a Python statement of DECISIONS D8 (see "matrix-vector products" below).

The output is deterministic (per-vector seeds), so the committed golden/ folder can be checked
by regenerating it:  python3 tools/gen_golden.py --out DIR && diff -r DIR golden

Outputs: this program is the one writer of the repository that does not follow the output
rules of the others (docs/cli.md, "Outputs"), on purpose. Those rules are about one output
file a user names; its output is a folder of generated files (--out DIR, default golden/),
which it exists to regenerate in place, file by file, and which `diff -r` or git shows
afterwards. Applying the rules here would take a second implementation of them in Python,
since this generator must not call libsgfp4 (it is the independent check of the library),
and two implementations are what the rules' single home in the library avoids. It reads no
file, so it cannot overwrite an input.
"""

import argparse
import hashlib
import json
import math
import os
import random
import struct
import sys

MB = 64  # macroblock edge

# ---- numbers -------------------------------------------------------------------------------


def half_value(h):
    """Exact value of IEEE binary16 bits h as a Python float (double)."""
    sign = -1.0 if h & 0x8000 else 1.0
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0x1F:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * math.ldexp(m, -24)  # subnormal (and +-0: sign * 0.0 keeps the sign)
    return sign * math.ldexp(1024 + m, e - 25)


def f32_bytes(x):
    """x rounded once to binary32 (nearest even), as little-endian bytes."""
    return struct.pack('<f', x)


FP4_VALUE = [n if n < 8 else n - 16 for n in range(16)]  # D4: two's complement nibble
T158_VALUE = [0, 1, -1, 0]                                 # D4: 0b11 reserved -> 0


def align16(n):
    return (n + 15) & ~15


def u32(v):
    return struct.pack('<I', v & 0xFFFFFFFF)


# ---- leaves and trees ----------------------------------------------------------------------


class Leaf:
    """One leaf as an encoder intends it: position in the macroblock, edge, mode, the fp16 bits
    of scale and bias, and one code symbol per weight (row-major within the leaf): a nibble
    0..15 for FP4, a 2-bit symbol 0..3 for T158. `flags` adds v2 header flag bits (rejects)."""

    def __init__(self, y, x, size, mode, scale, bias, symbols, flags=0):
        assert len(symbols) == size * size
        self.y, self.x, self.size, self.mode = y, x, size, mode
        self.scale, self.bias, self.symbols, self.flags = scale, bias, symbols, flags

    def payload(self):
        """Packed codes (spec §22.6): FP4 code i at bits 4*(i%8) of LE word i/8; T158 code i
        at bits 2*(i%16) of LE word i/16."""
        out = bytearray()
        if self.mode == 0:
            for i in range(0, len(self.symbols), 2):
                out.append(self.symbols[i] | self.symbols[i + 1] << 4)
        else:
            for i in range(0, len(self.symbols), 4):
                s = self.symbols[i:i + 4]
                out.append(s[0] | s[1] << 2 | s[2] << 4 | s[3] << 6)
        return bytes(out)

    def values(self, profile):
        """Intended decoded weights of the leaf, row-major, as doubles before rounding."""
        S = half_value(self.scale)
        B = half_value(self.bias & (0xFFF0 if profile == 'v2' else 0xFFFF))
        table = FP4_VALUE if self.mode == 0 else T158_VALUE
        return [S * float(table[s]) + B for s in self.symbols]


def random_symbols(rng, size, mode, reserved=False):
    n = size * size
    if mode == 0:
        return [rng.randrange(16) for _ in range(n)]
    hi = 4 if reserved else 3  # encoders never write 0b11; only chosen vectors do
    return [rng.randrange(hi) for _ in range(n)]


def random_half(rng, lo_exp=1, hi_exp=30, negative=True):
    """A random finite fp16 with exponent field in [lo_exp, hi_exp]."""
    sign = 0x8000 if negative and rng.randrange(2) else 0
    return sign | rng.randint(lo_exp, hi_exp) << 10 | rng.randrange(1024)


def random_leaf(rng, y, x, size, mode=None, reserved=False):
    if mode is None:
        mode = rng.randrange(2)
    scale = random_half(rng, 5, 20, negative=False)
    bias = random_half(rng, 5, 20)
    return Leaf(y, x, size, mode, scale, bias, random_symbols(rng, size, mode, reserved))


# A split tree: None is a leaf; a list of four trees (TL, TR, BL, BR) is a split node.
LEAF = None


def tree_bits_and_leaves(tree):
    """Pre-order DFS (D5): the split bits and the (y, x, size) of the leaves in DFS order."""
    bits, leaves = [], []

    def visit(node, y, x, size):
        if size >= 8:
            bits.append(0 if node is LEAF else 1)
        else:
            assert node is LEAF, "a 4x4 node cannot split"
        if node is LEAF:
            leaves.append((y, x, size))
            return
        h = size // 2
        for child, (dy, dx) in zip(node, ((0, 0), (0, h), (h, 0), (h, h))):
            visit(child, y + dy, x + dx, h)

    visit(tree, 0, 0, MB)
    return bits, leaves


def split_words(bits):
    """Bit k of the map is bit k % 32 of LE word k // 32 (D5)."""
    words = [0, 0, 0]
    for k, b in enumerate(bits):
        words[k // 32] |= b << (k % 32)
    return words


def full_tree(size=MB):
    return LEAF if size == 4 else [full_tree(size // 2) for _ in range(4)]


def random_tree(rng, size=MB, p=0.55):
    if size == 4 or rng.random() >= p:
        return LEAF
    return [random_tree(rng, size // 2, p * 0.9) for _ in range(4)]


UNIFORM_EDGE = {0: 64, 1: 32, 2: 16, 3: 8, 5: 4}
LAYOUT_NAME = {0: 'UNIFORM_64', 1: 'UNIFORM_32', 2: 'UNIFORM_16', 3: 'UNIFORM_8', 4: 'MIXED',
               5: 'FULL_4X4'}


def raster_positions(layout):
    e = UNIFORM_EDGE[layout]
    return [(y, x, e) for y in range(0, MB, e) for x in range(0, MB, e)]


# ---- v2 records and streams ----------------------------------------------------------------


class Record:
    """A v2 macroblock record: layout, split tree (MIXED only), leaves in storage order."""

    def __init__(self, layout, leaves, tree=None, sb_extra=0, words=None):
        self.layout, self.leaves, self.tree = layout, leaves, tree
        self.sb_extra = sb_extra  # reserved sb_header bits (rejects)
        self.words = words        # explicit split words (rejects), else from the tree

    def to_bytes(self):
        out = bytearray(u32(self.layout | self.sb_extra))
        if self.layout == 4:
            words = self.words or split_words(tree_bits_and_leaves(self.tree)[0])
            for w in words:
                out += u32(w)
        for leaf in self.leaves:  # header: packHalf2x16(S, Bias), low 4 bits = flags (22.1)
            out += u32(leaf.scale << 16 | (leaf.bias & 0xFFF0) | leaf.mode | leaf.flags)
        out += bytes(align16(len(out)) - len(out))
        for leaf in self.leaves:
            p = leaf.payload()
            out += p + bytes(align16(len(p)) - len(p))
        return bytes(out)


def make_record(rng, layout, tree=None, mode=None, reserved=False):
    if layout == 4:
        positions = tree_bits_and_leaves(tree)[1]
    else:
        positions = raster_positions(layout)
    leaves = [random_leaf(rng, y, x, s, mode, reserved) for (y, x, s) in positions]
    return Record(layout, leaves, tree)


def random_record(rng, reserved=False):
    layout = rng.choice([0, 1, 2, 3, 4, 4, 4, 5])
    return make_record(rng, layout, random_tree(rng) if layout == 4 else None, None, reserved)


def v2_stream(records, gaps=None, gap_fill=None, placements=None):
    """'SGF4' | 0x02 | B | pad[7] | offsets[B] | pad to align16(16 + 4B) | record region.
    gaps[b]: bytes (a multiple of 16) left before record b, filled with gap_fill[b] (bytes).
    placements: explicit [(offset, bytes)] for each record, overlapping allowed where the
    bytes agree."""
    B = len(records)
    base = align16(16 + 4 * B)
    region = bytearray()
    offsets = []
    if placements is None:
        placements = []
        at = 0
        for b, rec in enumerate(records):
            if gaps:
                fill = gap_fill[b] if gap_fill else bytes(gaps[b])
                assert len(fill) == gaps[b] and gaps[b] % 16 == 0
                region += fill
                at += gaps[b]
            data = rec.to_bytes()
            placements.append((at, data))
            region += data
            at += len(data)
        offsets = [off for off, _ in placements]
    else:
        written = {}
        for off, data in placements:
            end = off + len(data)
            if len(region) < end:
                region += bytes(end - len(region))
            for i, byte in enumerate(data):
                assert written.get(off + i, byte) == byte, "overlapping bytes must agree"
                written[off + i] = byte
                region[off + i] = byte
            offsets.append(off)
    head = bytearray(b'SGF4' + bytes([2]) + u32(B) + bytes(7))
    for off in offsets:
        head += u32(off)
    head += bytes(base - len(head))
    return bytes(head + region)


# ---- v1 containers -------------------------------------------------------------------------


class V1Block:
    """A v1 block: one 64x64 leaf whose payload lies at byte `base` of the codes blob."""

    def __init__(self, leaf, base, hint=False, reserved_flags=0):
        self.leaf, self.base, self.hint, self.reserved_flags = leaf, base, hint, reserved_flags


def v1_payload(leaf):
    p = leaf.payload()
    return p + bytes(2048 - len(p))  # T158: words 256..511 zero


def v1_container(blocks, blob=None):
    """headers[B] | offsets[B] | codes_blob[B * 2048] (D3). Without `blob`, each block's
    payload is written at its base (shared bases must hold identical payloads)."""
    B = len(blocks)
    if blob is None:
        blob = bytearray(B * 2048)
        written = {}
        for blk in blocks:
            p = v1_payload(blk.leaf)
            if blk.base in written:
                assert written[blk.base] == p, "a shared payload must be identical"
            written[blk.base] = p
            blob[blk.base:blk.base + 2048] = p
    out = bytearray()
    for blk in blocks:
        out += u32(blk.leaf.scale << 16 | blk.leaf.bias)  # v1: bias is all 16 low bits
    for blk in blocks:
        out += u32(blk.base | blk.leaf.mode | (2 if blk.hint else 0) | blk.reserved_flags)
    return bytes(out + blob)


# ---- expected output -----------------------------------------------------------------------


def expected_f32(shape, profile, blocks_leaves):
    """Row-major float32 bytes of the (O, I) tensor: the padded grid filled leaf by leaf from
    the intended values, then cropped. blocks_leaves[b] lists the leaves of block b."""
    O, I = shape
    tx = -(-I // MB)
    rows = {}
    for b, leaves in enumerate(blocks_leaves):
        by, bx = divmod(b, tx)
        for leaf in leaves:
            vals = leaf.values(profile)
            for r in range(leaf.size):
                gy = by * MB + leaf.y + r
                if gy >= O:
                    continue
                row = rows.setdefault(gy, {})
                for c in range(leaf.size):
                    gx = bx * MB + leaf.x + c
                    if gx < I:
                        row[gx] = vals[r * leaf.size + c]
    out = bytearray()
    for r in range(O):
        row = rows[r]
        for c in range(I):
            out += f32_bytes(row[c])
    return bytes(out)


def tiles(shape):
    return -(-shape[0] // MB), -(-shape[1] // MB)


# ---- the vectors ---------------------------------------------------------------------------


class GoldenSet:
    def __init__(self, dump_expected=None):
        self.vectors = []  # (manifest entry, relative path, bytes)
        self.dump_expected = dump_expected
        self.names = set()
        self.decoded = {}  # name -> (profile, shape, blocks_leaves, file): for matvec vectors

    def _add(self, kind, name, profile, shape, data, entry):
        assert name not in self.names, name
        self.names.add(name)
        ext = 'sgfp4' if profile == 'v2' else 'fp4'
        rel = '%s/%s.%s' % (kind, name, ext)
        e = {'name': name, 'file': rel, 'profile': profile, 'shape': list(shape)}
        e.update(entry)
        self.vectors.append((e, rel, data))

    def decode(self, name, profile, shape, data, blocks_leaves, note):
        ty, tx = tiles(shape)
        assert len(blocks_leaves) == ty * tx
        exp = expected_f32(shape, profile, blocks_leaves)
        assert len(exp) == shape[0] * shape[1] * 4
        if self.dump_expected:
            with open(os.path.join(self.dump_expected, name + '.f32'), 'wb') as f:
                f.write(exp)
        self._add('decode', name, profile, shape, data,
                  {'expect': 'decode', 'sha256': hashlib.sha256(exp).hexdigest(), 'note': note})
        self.decoded[name] = (profile, shape, blocks_leaves, self.vectors[-1][1])

    def reject(self, name, profile, shape, data, status, note):
        self._add('reject', name, profile, shape, data,
                  {'expect': 'reject', 'status': status, 'note': note})


def v2_decode(g, name, shape, records, note, **stream_args):
    g.decode(name, 'v2', shape, v2_stream(records, **stream_args),
             [r.leaves for r in records], note)


def v1_decode(g, name, shape, blocks, note, blob=None):
    g.decode(name, 'v1', shape, v1_container(blocks, blob), [[b.leaf] for b in blocks], note)


def known_tree():
    # leaves 32@(0,0), 32@(0,32), 16@(32,0), 16@(32,16), 16@(48,0), 16@(48,16), 32@(32,32)
    return [LEAF, LEAF, [LEAF, LEAF, LEAF, LEAF], LEAF]


def asymmetric_tree():
    # TL split down to 4x4 along its top-left path; TR a 32 leaf; BL 16s; BR 8s in one corner
    tl = [[[LEAF] * 4, LEAF, LEAF, [LEAF] * 4], LEAF, LEAF, LEAF]
    bl = [LEAF, LEAF, LEAF, LEAF]
    br = [[LEAF, LEAF, LEAF, [LEAF] * 4], LEAF, LEAF, LEAF]
    return [tl, LEAF, bl, br]


def add_v2_decode_vectors(g):
    R = lambda name: random.Random('sgfp4-golden:' + name)  # noqa: E731 (per-vector seed)

    names = {0: 'uniform64', 1: 'uniform32', 2: 'uniform16', 3: 'uniform8', 5: 'full4x4'}
    for layout in (0, 1, 2, 3, 5):
        for mode in (0, 1):
            n = 'v2_layout%d_%s_%s' % (layout, names[layout], 'fp4' if mode == 0 else 't158')
            v2_decode(g, n, (64, 64), [make_record(R(n), layout, mode=mode)],
                      'layout %d (%s), every leaf %s, raster leaf order; random codes, '
                      'scales and biases' % (layout, LAYOUT_NAME[layout],
                                            'FP4' if mode == 0 else 'T158'))
    for layout in (1, 2, 3, 5):
        n = 'v2_layout%d_%s_mixed_modes' % (layout, names[layout])
        v2_decode(g, n, (64, 64), [make_record(R(n), layout)],
                  'layout %d with FP4 and T158 leaves interleaved (payload sizes differ per '
                  'leaf)' % layout)

    n = 'v2_mixed_known_tree'
    v2_decode(g, n, (64, 64), [make_record(R(n), 4, known_tree())],
              'MIXED, split map word0 = (1<<0)|(1<<3), word1 = word2 = 0: leaves 32@(0,0), '
              '32@(0,32), 16@(32,0), 16@(32,16), 16@(48,0), 16@(48,16), 32@(32,32)')
    n = 'v2_mixed_full_split'
    v2_decode(g, n, (64, 64), [make_record(R(n), 4, full_tree())],
              'MIXED with all 85 split bits set: 256 4x4 leaves in pre-order DFS order '
              '(not the raster order of FULL_4X4)')
    n = 'v2_mixed_asymmetric'
    v2_decode(g, n, (64, 64), [make_record(R(n), 4, asymmetric_tree())],
              'MIXED asymmetric tree with leaves of every size 32/16/8/4, both modes')
    n = 'v2_mixed_root_leaf'
    v2_decode(g, n, (64, 64), [make_record(R(n), 4, LEAF)],
              'MIXED whose split map is all zero: one 64x64 leaf (1 bit used)')
    n = 'v2_mixed_one_deep_path'
    deep = [[[[LEAF] * 4, LEAF, LEAF, LEAF], LEAF, LEAF, LEAF], LEAF, LEAF, LEAF]
    v2_decode(g, n, (64, 64), [make_record(R(n), 4, deep)],
              'MIXED: only the top-left path split down to 4x4 (13 leaves, 13 bits)')
    n = 'v2_mixed_random_trees'
    rng = R(n)
    v2_decode(g, n, (128, 192), [make_record(rng, 4, random_tree(rng)) for _ in range(6)],
              '6 MIXED records with random trees and random modes, 2x3 blocks')

    n = 'v2_t158_reserved_symbol'
    rng = R(n)
    recs = [make_record(rng, 2, mode=1, reserved=True)]
    for leaf in recs[0].leaves:  # make sure every leaf holds 0b11 and the other three
        leaf.symbols[:4] = [3, 0, 1, 2]
    v2_decode(g, n, (64, 64), recs,
              'T158 payloads using all four symbols incl. the reserved 0b11, which decodes '
              'as 0 (D4)')

    n = 'v2_special_scales_biases'
    rng = R(n)
    specials = [  # (scale bits, bias bits as intended; v2 masks the bias's low nibble)
        (0x0000, 0x0000), (0x8000, 0x8000), (0x8000, 0x0000), (0x0000, 0x8000),
        (0x0001, 0x0000), (0x0001, 0x8000), (0x03FF, 0x0010), (0x0400, 0x83F0),
        (0x7BFF, 0x0000), (0x7BFF, 0x7BF0), (0x7BFF, 0xFBF0), (0x7BFF, 0x0010),
        (0x0001, 0x7BF0), (0x3C00, 0x0010), (0x0200, 0x8010), (0x3555, 0xC000),
    ]
    rec = make_record(rng, 3)  # 64 leaves of 8x8
    for i, leaf in enumerate(rec.leaves):
        leaf.scale, leaf.bias = specials[i % len(specials)]
        if i % 2:  # the T158 variants too, with every symbol
            leaf.mode = 1
            leaf.symbols = random_symbols(rng, 8, 1, reserved=True)
        else:
            leaf.mode = 0
            leaf.symbols = [k % 16 for k in range(64)]
    v2_decode(g, n, (64, 64), [rec],
              'UNIFORM_8 leaves with scale/bias 0, -0 (both signs of zero results), fp16 '
              'subnormal (0x0001, 0x03FF, 0x0010 after mask, 0x83F0), 65504 (0x7BFF) and '
              '+-65280 (0x7BF0/0xFBF0, the largest masked bias); every code value')

    n = 'v2_bias_masked_low_nibble'
    rng = R(n)
    rec = make_record(rng, 1)
    for i, leaf in enumerate(rec.leaves):
        leaf.bias = [0x3C0F, 0xBC07, 0x0009, 0x7BFF][i]  # low nibble set in the intended bias
        leaf.mode = i % 2
        leaf.symbols = random_symbols(rng, 32, leaf.mode)
    v2_decode(g, n, (64, 64), [rec],
              'intended biases 0x3C0F, 0xBC07, 0x0009, 0x7BFF: the header keeps bias & 0xFFF0 '
              '| mode, and the decoded bias is half(header & 0xFFF0) (spec eq. 22.1)')

    n = 'v2_rounding'
    rng = R(n)
    rec = make_record(rng, 2, mode=0)
    cases = [  # (scale, bias): sums that need more than 24 bits, incl. exact ties
        (0x7800, 0x2400),  # 32768*q + 2^-6: a tie at 2^18 (q = 8 is not a code; q=-8 is)
        (0x7800, 0x2600),  # 32768*q + 1.5*2^-6
        (0x7BFF, 0x0010),  # 65504*q + 2^-20
        (0x7BFF, 0x3C00),  # 65504*q + 1
        (0x7400, 0x2000),  # 16384*q + 2^-7
        (0x7400, 0xA000),  # 16384*q - 2^-7
        (0x6C00, 0x1C00),  # 4096*q + 2^-8
        (0x6C00, 0x9E00),  # 4096*q - 1.5*2^-8
        (0x5BFF, 0x0030),  # 255.9*q + tiny
        (0x4400, 0x1400),  # 4*q + 2^-10
        (0x7A00, 0x2A00),  # 49152*q + 3*2^-5
        (0x7A00, 0xAA00),
        (0x77FF, 0x2010),
        (0x7BFE, 0x27F0),
        (0x7000, 0x1800),  # 8192*q + 2^-9
        (0x7000, 0x9800),
    ]
    for leaf, (s, b) in zip(rec.leaves, cases):
        leaf.scale, leaf.bias = s, b
        leaf.symbols = [k % 16 for k in range(256)]
    v2_decode(g, n, (64, 64), [rec],
              'S*q + B sums of up to ~43 significant bits that round once to binary32, '
              'including exact ties (round half to even) in both directions')

    for shape, what in (((1, 1), '1x1: one block, crop to a single weight'),
                        ((3, 130), '3x130: 1x3 blocks, crop rows and the last column tile'),
                        ((65, 64), '65x64: 2x1 blocks, one row in the second block row'),
                        ((130, 200), '130x200: 3x4 = 12 blocks, random layouts incl. MIXED, '
                                     'crop in both dimensions'),
                        ((64, 65), '64x65: 1x2 blocks, one column in the second block')):
        n = 'v2_shape_%dx%d' % shape
        rng = R(n)
        ty, tx = tiles(shape)
        v2_decode(g, n, shape, [random_record(rng) for _ in range(ty * tx)],
                  what + '; random content in the padding, which must be cropped away')

    n = 'v2_multiblock_every_layout'
    rng = R(n)
    recs = [make_record(rng, lay, random_tree(rng) if lay == 4 else None)
            for lay in (5, 4, 3, 2, 1, 0, 4, 0)]
    v2_decode(g, n, (128, 256), recs,
              '2x4 blocks, one of each layout (and MIXED twice), row-major block order; '
              'B = 8 (a multiple of 4: the offset table needs no pad)')

    n = 'v2_block_count_pad'
    rng = R(n)
    recs = [make_record(rng, lay) for lay in (0, 1, 2, 3, 5)]
    v2_decode(g, n, (64, 320), recs,
              'B = 5: offset table ends at byte 36, record region base align16(36) = 48 (D5)')

    n = 'v2_record_gaps'
    rng = R(n)
    recs = [random_record(rng) for _ in range(4)]
    gaps = [32, 16, 0, 48]
    fills = [bytes(32), bytes(rng.randrange(256) for _ in range(16)), b'',
             bytes(rng.randrange(1, 256) for _ in range(48))]
    v2_decode(g, n, (128, 128), recs,
              'gaps before records 0, 1 and 3 (zero and non-zero bytes): accepted and '
              'ignored (D2)', gaps=gaps, gap_fill=fills)

    n = 'v2_record_overlap'
    rng = R(n)
    second = make_record(rng, 0, mode=1)  # 16 header bytes + 1024 payload bytes
    second_bytes = second.to_bytes()
    first = make_record(rng, 0, mode=0)   # 16 header bytes + 2048 payload bytes
    # Record 1 starts at byte 1040 of the region, inside record 0's payload. Record 0's
    # intended codes in bytes 1040..2063 are the nibbles of record 1's first 1024 bytes.
    overlap = 2064 - 1040
    shared = second_bytes[:overlap]
    nibbles = []
    for byte in shared:
        nibbles += [byte & 15, byte >> 4]
    first.leaves[0].symbols[-len(nibbles):] = nibbles
    first_bytes = first.to_bytes()
    assert first_bytes[1040:] == shared
    v2_decode(g, n, (64, 128), [first, second],
              'record 1 starts inside record 0 payload (offsets 0 and 1040 still increase): '
              'overlapping records are accepted (D2)',
              placements=[(0, first_bytes), (1040, second_bytes)])


def add_v1_decode_vectors(g):
    R = lambda name: random.Random('sgfp4-golden:' + name)  # noqa: E731

    def blocks_for(rng, count, mode=None, reserved=False):
        return [V1Block(random_leaf(rng, 0, 0, 64, mode, reserved), b * 2048)
                for b in range(count)]

    n = 'v1_fp4'
    v1_decode(g, n, (64, 64), blocks_for(R(n), 1, 0), 'v1 FP4 block, every nibble value')
    n = 'v1_t158'
    v1_decode(g, n, (64, 64), blocks_for(R(n), 1, 1),
              'v1 T158 block: words 0..255 active, 256..511 zero')
    n = 'v1_t158_reserved_symbol'
    blk = blocks_for(R(n), 1, 1, reserved=True)
    blk[0].leaf.symbols[:4] = [3, 3, 1, 2]
    v1_decode(g, n, (64, 64), blk, 'v1 T158 payload with reserved symbols 0b11 -> 0 (D4)')

    n = 'v1_error_hint'
    rng = R(n)
    blks = blocks_for(rng, 4)
    blks[0].hint = blks[3].hint = True
    blks[1].leaf.mode = 1
    blks[1].leaf.symbols = random_symbols(rng, 64, 1)
    blks[1].hint = True
    v1_decode(g, n, (128, 128), blks,
              'v1 flag bit 1 (ERROR_HINT) set on FP4 and T158 blocks: informational, decode '
              'unchanged (D2)')

    n = 'v1_shared_payloads'
    rng = R(n)
    a = random_leaf(rng, 0, 0, 64, 0)
    t = random_leaf(rng, 0, 0, 64, 1)
    blks = [V1Block(a, 4096), V1Block(Leaf(0, 0, 64, 0, 0x3C00, 0x8000, a.symbols), 4096),
            V1Block(t, 0), V1Block(Leaf(0, 0, 64, 1, 0x4000, 0x3800, t.symbols), 0),
            V1Block(random_leaf(rng, 0, 0, 64, 0), 8192),
            V1Block(Leaf(0, 0, 64, 0, 0x2C00, 0x0000, a.symbols), 4096)]
    # payload slots 2048 and 10240 are referenced by no block: fill them with noise
    blob = bytearray(6 * 2048)
    for blk in blks:
        blob[blk.base:blk.base + 2048] = v1_payload(blk.leaf)
    blob[2048:4096] = bytes(rng.randrange(256) for _ in range(2048))
    blob[10240:12288] = bytes(rng.randrange(256) for _ in range(2048))
    v1_decode(g, n, (128, 192), blks,
              'v1 blocks sharing payloads (3 blocks on one FP4 payload, 2 on one T158) with '
              'their own scale/bias; offsets out of block order; unreferenced blob bytes '
              'non-zero (D2/D3)', blob=bytes(blob))

    n = 'v1_overlapping_payloads'
    rng = R(n)
    stream = [rng.randrange(16) for _ in range(3 * 4096)]  # nibbles of the whole blob
    blob = bytearray()
    for i in range(0, len(stream), 2):
        blob.append(stream[i] | stream[i + 1] << 4)
    bases = [0, 1024, 1040]  # byte offsets: payloads overlap each other
    blks = []
    for base in bases:
        leaf = random_leaf(rng, 0, 0, 64, 0)
        leaf.symbols = stream[2 * base:2 * base + 4096]
        blks.append(V1Block(leaf, base))
    v1_decode(g, n, (64, 192), blks,
              'v1 FP4 payloads at blob offsets 0, 1024, 1040 overlapping one another: '
              'accepted; decoders use the stored offset, not b*2048 (D3)', blob=bytes(blob))

    n = 'v1_special_scales_biases'
    rng = R(n)
    specials = [(0x0000, 0x8000), (0x8000, 0x8000), (0x0001, 0x0001), (0x03FF, 0x83FF),
                (0x7BFF, 0x7BFF), (0x7BFF, 0xFBFF), (0x3C00, 0x3C0F), (0x0001, 0x7BFF)]
    blks = []
    for b, (s, bias) in enumerate(specials):
        mode = b % 2
        syms = [k % 16 for k in range(4096)] if mode == 0 else random_symbols(rng, 64, 1, True)
        blks.append(V1Block(Leaf(0, 0, 64, mode, s, bias, syms), b * 2048))
    v1_decode(g, n, (128, 256), blks,
              'v1 scale/bias 0, -0, subnormal (0x0001, 0x03FF, 0x83FF), +-65504; the v1 bias '
              'uses all 16 bits (0x3C0F, 0x0001 are not masked: D3)')

    for shape in ((1, 1), (3, 130), (65, 64), (130, 200)):
        n = 'v1_shape_%dx%d' % shape
        rng = R(n)
        ty, tx = tiles(shape)
        v1_decode(g, n, shape, blocks_for(rng, ty * tx),
                  'v1 %dx%d (%dx%d blocks), random modes; padding content cropped away'
                  % (shape + (ty, tx)))


# ---- must-reject vectors -------------------------------------------------------------------


def patch(data, at, new):
    b = bytearray(data)
    b[at:at + len(new)] = new
    return bytes(b)


def add_reject_vectors(g):
    R = lambda name: random.Random('sgfp4-golden:' + name)  # noqa: E731

    def v2_one(rng, layout=0, tree=None, mode=None):
        return make_record(rng, layout, tree, mode)

    def rej(name, profile, shape, data, status, note):
        g.reject(name, profile, shape, data, status, note)

    # -- shape and length
    # 64x64, B = 1: table 16..20, pad 20..32, record 32, FP4 leaf header at 36
    base = v2_stream([v2_one(R('base'), 0, mode=0)])
    rej('shape_zero_rows', 'v2', (0, 64), base, 'SHAPE', 'O = 0 (D2: O >= 1 and I >= 1)')
    v1base = v1_container([V1Block(random_leaf(R('v1base'), 0, 0, 64, 0), 0)])
    rej('shape_zero_cols_v1', 'v1', (64, 0), v1base, 'SHAPE', 'I = 0 (v1)')
    rej('shape_too_large', 'v2', (1 << 32, 1 << 32), base, 'SHAPE',
        '2^32 x 2^32: the padded tensor does not fit the address space (D2)')
    rej('v2_truncated_header', 'v2', (64, 64), base[:12], 'TRUNCATED',
        '12 bytes: shorter than the 16-byte stream header')
    b5 = v2_stream([v2_one(R('b5.%d' % i)) for i in range(5)])  # table 16..36, base 48
    rej('v2_truncated_offset_table', 'v2', (64, 320), b5[:40], 'TRUNCATED',
        'B = 5: the stream ends at byte 40, inside the offset table + pad (needs 48)')
    rej('v1_length_short', 'v1', (64, 64), v1base[:-1], 'V1_LENGTH',
        'v1 file one byte shorter than B * 2056')
    rej('v1_length_long', 'v1', (64, 64), v1base + b'\0', 'V1_LENGTH',
        'v1 file one byte longer than B * 2056')

    # -- v1 rules
    rej('v1_reserved_flag_bit2', 'v1', (64, 64), patch(v1base, 4, u32(0x4)),
        'V1_RESERVED_FLAGS', 'offsets[0] & 0x4 set (reserved flag bit 2)')
    rej('v1_reserved_flag_bit3', 'v1', (64, 64), patch(v1base, 4, u32(0x8 | 0x2)),
        'V1_RESERVED_FLAGS', 'offsets[0] & 0x8 set (reserved flag bit 3, with ERROR_HINT)')
    rng = R('v1_two')
    v1two = v1_container([V1Block(random_leaf(rng, 0, 0, 64, 0), 0),
                          V1Block(random_leaf(rng, 0, 0, 64, 0), 2048)])
    rej('v1_offset_range', 'v1', (64, 128), patch(v1two, 12, u32(2048 + 16)),
        'V1_OFFSET_RANGE', 'offsets[1] = 2064: payload 2064 + 2048 > blob size 4096')
    rej('v1_offset_range_high_bits', 'v1', (64, 128), patch(v1two, 8, u32(0xFFFFFFF0)),
        'V1_OFFSET_RANGE', 'offsets[0] = 0xFFFFFFF0: far outside the blob (no overflow)')
    t158 = v1_container([V1Block(random_leaf(R('v1t'), 0, 0, 64, 1), 0)])
    rej('v1_t158_tail', 'v1', (64, 64), patch(t158, 8 + 2047, b'\x01'), 'V1_T158_TAIL',
        'v1 T158 block whose payload word 511 is not zero')
    rej('v1_t158_tail_first_word', 'v1', (64, 64), patch(t158, 8 + 1024, b'\x80'),
        'V1_T158_TAIL', 'v1 T158 block whose payload word 256 is not zero')

    # -- affine header rules
    def v1_header(scale, bias):
        return patch(v1base, 0, u32(scale << 16 | bias))
    rej('v1_scale_inf', 'v1', (64, 64), v1_header(0x7C00, 0x3C00), 'SCALE_NONFINITE',
        'v1 scale +inf')
    rej('v1_scale_nan', 'v1', (64, 64), v1_header(0x7E00, 0x3C00), 'SCALE_NONFINITE',
        'v1 scale NaN')
    rej('v1_scale_negative', 'v1', (64, 64), v1_header(0xBC00, 0x0000), 'SCALE_NEGATIVE',
        'v1 scale -1.0')
    rej('v1_bias_neg_inf', 'v1', (64, 64), v1_header(0x3C00, 0xFC00), 'BIAS_NONFINITE',
        'v1 bias -inf')
    rej('v1_bias_nan_low_nibble', 'v1', (64, 64), v1_header(0x3C00, 0x7C01),
        'BIAS_NONFINITE', 'v1 bias 0x7C01 (NaN; v1 takes all 16 bits, D3)')

    rec_hdr = 32 + 4  # first leaf header of record 0 in `base` (UNIFORM_64)

    def v2_header(word, data=base, at=rec_hdr):
        """Replaces a leaf header word, keeping its mode bit (so payload sizes stay)."""
        return patch(data, at, u32(word | (u32_at(data, at) & 1)))
    rej('v2_scale_inf', 'v2', (64, 64), v2_header(0x7C00 << 16 | 0x3C00), 'SCALE_NONFINITE',
        'v2 leaf scale +inf')
    rej('v2_scale_nan', 'v2', (64, 64), v2_header(0xFE00 << 16 | 0x3C00), 'SCALE_NONFINITE',
        'v2 leaf scale -NaN')
    rej('v2_scale_negative_subnormal', 'v2', (64, 64), v2_header(0x8001 << 16),
        'SCALE_NEGATIVE', 'v2 leaf scale 0x8001 (the smallest negative subnormal)')
    rej('v2_bias_inf_after_mask', 'v2', (64, 64), v2_header(0x3C00 << 16 | 0x7C00),
        'BIAS_NONFINITE', 'v2 leaf bias bits 0x7C00: +inf')
    t158rec = v2_stream([v2_one(R('v2t'), 0, mode=1)])
    rej('v2_bias_nan_masked_to_inf', 'v2', (64, 64),
        v2_header(0x3C00 << 16 | 0x7C01, t158rec), 'BIAS_NONFINITE',
        'v2 T158 leaf: header low half 0x7C01; the mode bit is masked off, leaving 0x7C00 '
        '= inf (D2: bias checked after & 0xFFF0)')
    rej('v2_bias_nan', 'v2', (64, 64), v2_header(0x3C00 << 16 | 0xFE00), 'BIAS_NONFINITE',
        'v2 leaf bias -NaN')

    # -- v2 stream header
    rej('v2_bad_magic', 'v2', (64, 64), patch(base, 0, b'SGF5'), 'V2_MAGIC',
        "magic 'SGF5' opened as v2")
    rej('v2_bad_version', 'v2', (64, 64), patch(base, 4, b'\x01'), 'V2_VERSION', 'version 0x01')
    rej('v2_header_pad', 'v2', (64, 64), patch(base, 15, b'\x01'), 'V2_HEADER_PAD',
        'last of the 7 header pad bytes (byte 15) is 1')
    two = v2_stream([v2_one(R('two.0')), v2_one(R('two.1'))])
    rej('v2_block_count', 'v2', (64, 64), two, 'V2_BLOCK_COUNT',
        'a valid 64x128 stream (B = 2) opened as 64x64 (needs B = 1)')
    rej('v2_table_pad', 'v2', (64, 64), patch(base, 31, b'\x01'), 'V2_TABLE_PAD',
        'B = 1: byte 31, the last offset-table pad byte before align16(20) = 32, is 1')

    # -- record offsets
    rej('v2_offset_align', 'v2', (64, 128), patch(two, 20, u32(u32_at(two, 20) + 8)),
        'V2_OFFSET_ALIGN', 'record 1 offset not a multiple of 16')
    rej('v2_offset_order_equal', 'v2', (64, 128), patch(two, 20, u32(0)), 'V2_OFFSET_ORDER',
        'record 1 offset equal to record 0 offset (must strictly increase)')
    rej('v2_offset_order_decreasing', 'v2', (64, 128),
        swap_offsets(two), 'V2_OFFSET_ORDER',
        'records stored in reverse order: offsets decrease (each record is valid)')
    rej('v2_record_bounds_truncated', 'v2', (64, 64), base[:-16], 'V2_RECORD_BOUNDS',
        'the last leaf payload is cut short by 16 bytes')
    rej('v2_record_bounds_offset_past_end', 'v2', (64, 128), two[:32 + u32_at(two, 20)],
        'V2_RECORD_BOUNDS', 'B = 2, but the stream ends where record 1 would begin (its '
        'offset points at the end: no room for its sb_header)')
    full = v2_stream([v2_one(R('full4x4'), 5)])
    rej('v2_record_bounds_headers', 'v2', (64, 64), full[:32 + 4 + 1000], 'V2_RECORD_BOUNDS',
        'FULL_4X4 record whose 256 leaf headers run past the end of the stream')

    # -- record contents
    rej('v2_sb_reserved', 'v2', (64, 64), patch(base, 32, u32(0x8)), 'V2_SB_RESERVED',
        'sb_header 0x8: layout 0 with reserved bit 3 set')
    rej('v2_sb_reserved_high', 'v2', (64, 64), patch(base, 32, u32(0x80000000)),
        'V2_SB_RESERVED', 'sb_header bit 31 set')
    rej('v2_layout_6', 'v2', (64, 64), patch(base, 32, u32(6)), 'V2_LAYOUT', 'layout 6')
    rej('v2_layout_7', 'v2', (64, 64), patch(base, 32, u32(7)), 'V2_LAYOUT', 'layout 7')
    known = v2_stream([v2_one(R('known'), 4, known_tree())])
    rej('v2_split_trailing', 'v2', (64, 64), patch(known, 32 + 4, u32(0x9 | 1 << 9)),
        'V2_SPLIT_TRAILING', 'known tree (9 bits used) plus bit 9 set')
    rej('v2_split_trailing_word2', 'v2', (64, 64), patch(known, 32 + 12, u32(1 << 31)),
        'V2_SPLIT_TRAILING', 'known tree plus bit 95 (the last of word 2) set')
    allsplit = v2_stream([v2_one(R('allsplit'), 4, full_tree())])
    rej('v2_split_trailing_after_full', 'v2', (64, 64),
        patch(allsplit, 32 + 12, u32(0x1FFFFF | 1 << 21)), 'V2_SPLIT_TRAILING',
        'all 85 bits set plus bit 85, which no tree can use')
    rootleaf = v2_stream([v2_one(R('rootleaf'), 4, LEAF)])
    rej('v2_split_trailing_root_leaf', 'v2', (64, 64), patch(rootleaf, 32 + 4, u32(0x2)),
        'V2_SPLIT_TRAILING', 'root leaf (bit 0 = 0, 1 bit used) with bit 1 set')
    rej('v2_leaf_flags_bit1', 'v2', (64, 64), v2_header(u32_at(base, rec_hdr) | 0x2),
        'V2_LEAF_FLAGS', 'leaf header flag bit 1 (reserved log mode) set')
    u32rec = v2_stream([v2_one(R('u32'), 1)])  # sb 4 + 4 headers = 20, pad to 32
    rej('v2_leaf_flags_bit3', 'v2', (64, 64),
        v2_header(u32_at(u32rec, 32 + 4 + 8) | 0x8, u32rec, 32 + 4 + 8), 'V2_LEAF_FLAGS',
        'UNIFORM_32 leaf 2 header flag bit 3 set')
    rej('v2_leaf_header_pad', 'v2', (64, 64), patch(u32rec, 32 + 31, b'\x10'),
        'V2_LEAF_HEADER_PAD', 'UNIFORM_32: last pad byte after the 4 leaf headers is not zero')
    rej('v2_payload_pad_t158_4x4', 'v2', (64, 64), full4x4_pad_corrupt(R('pp')),
        'V2_PAYLOAD_PAD', 'FULL_4X4: a T158 leaf (4-byte payload) with a non-zero pad byte')
    rej('v2_payload_pad_fp4_4x4', 'v2', (64, 64), full4x4_fp4_pad_corrupt(R('pp8')),
        'V2_PAYLOAD_PAD', 'FULL_4X4: an FP4 leaf (8-byte payload + 8 pad) with a non-zero pad '
        'byte (only 4x4 leaves have payload pad)')
    rej('v2_trailing_bytes', 'v2', (64, 64), base + bytes(16), 'V2_TRAILING_BYTES',
        '16 zero bytes after the last record')
    rej('v2_trailing_byte', 'v2', (64, 64), base + b'\x01', 'V2_TRAILING_BYTES',
        'one byte after the last record')


def u32_at(data, at):
    return struct.unpack_from('<I', data, at)[0]


def swap_offsets(two):
    """Swaps the two record offsets of a B = 2 stream (records stay valid, order decreases)."""
    a, b = u32_at(two, 16), u32_at(two, 20)
    return patch(patch(two, 16, u32(b)), 20, u32(a))


def full4x4_pad_corrupt(rng):
    """A FULL_4X4 record: leaf 0 T158 (payload 4 bytes + 12 pad); pad byte 15 set to 1."""
    rec = make_record(rng, 5)
    rec.leaves[0].mode = 1
    rec.leaves[0].symbols = random_symbols(rng, 4, 1)
    data = v2_stream([rec])
    payload0 = 32 + align16(4 + 4 * 256)
    return patch(data, payload0 + 15, b'\x01')


def full4x4_fp4_pad_corrupt(rng):
    """FULL_4X4 FP4 leaf: 8-byte payload + 8 pad; the first pad byte set."""
    rec = make_record(rng, 5)
    rec.leaves[0].mode = 0
    rec.leaves[0].symbols = random_symbols(rng, 4, 0)
    data = v2_stream([rec])
    payload0 = 32 + align16(4 + 4 * 256)
    return patch(data, payload0 + 8, b'\x01')


# ---- matrix-vector products (DECISIONS D8) -------------------------------------------------
#
# golden/matvec: each vector is a container (a must-decode vector's file, or one written
# here), activations x [batch][I] (float32 or float16, little-endian), for Class A the
# quantized activations q8 the library's quantizer must produce, and the expected products
# y [batch][O] (float32). The expected bytes come from the intended leaf values through the
# Python statement of D8 below, never from the library. A binary32 operation is done in
# double and rounded once to binary32 by f32(): for one +, - or * of binary32 operands that
# is the correctly rounded binary32 result (53 >= 2 * 24 + 2 bits: double rounding is
# innocuous); integer cell sums are exact Python ints. A NaN result's sign and payload are
# not part of D8: the checker accepts any NaN where y holds one.


def f32(x):
    """x rounded once to binary32 (nearest even; infinity beyond the range), as a float."""
    if x != x or math.isinf(x):
        return x
    try:
        return struct.unpack('<f', struct.pack('<f', x))[0]
    except OverflowError:  # the rounded value is beyond the largest finite binary32
        return math.copysign(math.inf, x)


def d8_tree(values):
    """D8's tree: pad with +0 to P, the next power of two, then v_i = fl32(v_i + v_{i+h}) for
    h = P/2, ..., 1; the result is v_0."""
    v = list(values)
    size = 1
    while size < len(v):
        size *= 2
    v += [0.0] * (size - len(v))
    h = size // 2
    while h >= 1:
        for i in range(h):
            v[i] = f32(v[i] + v[i + h])
        h //= 2
    return v[0]


def d8_quantize(x):
    """The Class A quantizer: per 64-column block, m = max |x_j|; m < 2^-40: d = 0, q = 0;
    else d = 2^e for the smallest e with m <= 127 * 2^e, q_j = round_half_even(x_j * 2^-e).
    Returns (q, d): q a list of 64 ints per block (0 past the columns), d a float per block."""
    q, d = [], []
    for b in range(0, len(x), MB):
        block = x[b:b + MB]
        m = max(abs(v) for v in block)
        if m < 2.0 ** -40:
            q.append([0] * MB)
            d.append(0.0)
            continue
        e = math.frexp(m)[1] - 8  # 127 * 2^e < m here: search upwards
        while m > 127 * 2.0 ** e:
            e += 1
        # ldexp is exact for these magnitudes; round() of a float rounds half to even
        q.append([round(math.ldexp(v, -e)) for v in block] + [0] * (MB - len(block)))
        d.append(2.0 ** e)
    return q, d


def q8_bytes(q, d):
    """One vector's q8 layout: q (int8) block after block, then d (float32), zero pad to a
    multiple of 64 bytes."""
    out = bytearray()
    for qb in q:
        out += struct.pack('<64b', *qb)
    for db in d:
        out += struct.pack('<f', db)
    return bytes(out) + bytes(-len(out) % 64)


def expanded(shape, profile, blocks_leaves):
    """grid[r][c] = (code, S, Bias) for every row r < O and column c of the padded width:
    the intended values of the leaf holding the position."""
    O, I = shape
    tx = -(-I // MB)
    grid = [[None] * (tx * MB) for _ in range(O)]
    for b, leaves in enumerate(blocks_leaves):
        by, bx = divmod(b, tx)
        for leaf in leaves:
            S = half_value(leaf.scale)
            B = half_value(leaf.bias & (0xFFF0 if profile == 'v2' else 0xFFFF))
            table = FP4_VALUE if leaf.mode == 0 else T158_VALUE
            for r in range(leaf.size):
                gy = by * MB + leaf.y + r
                if gy >= O:
                    continue
                row = grid[gy]
                for c in range(leaf.size):
                    row[bx * MB + leaf.x + c] = (table[leaf.symbols[r * leaf.size + c]], S, B)
    return grid


def d8_product_a(grid, shape, q, d):
    """Class A, one vector: per cell c = fl32(fl32(S * iq) + fl32(Bias * is)), iq = sum
    code_j * q_j, is = sum q_j (q_j = 0 in padding columns); t_b = d_b * tree(cells);
    y_r = tree(t_0 .. t_{n-1})."""
    ys = []
    for row in grid[:shape[0]]:
        partials = []
        for b, (qb, db) in enumerate(zip(q, d)):
            cells = []
            for k in range(16):
                at = b * MB + 4 * k
                _, S, B = row[at]  # the 4 columns of a cell lie in one leaf
                iq = sum(row[at + i][0] * qb[4 * k + i] for i in range(4))
                isum = sum(qb[4 * k + i] for i in range(4))
                cells.append(f32(f32(S * iq) + f32(B * isum)))
            partials.append(f32(d8_tree(cells) * db))
        ys.append(d8_tree(partials))
    return ys


def d8_product_b(grid, shape, x):
    """Class B, one vector: p_j = fl32(w_j * x_j), w_j = fl32(S * code + Bias) (D1), x_j read
    as +0 when |x_j| < 2^-60, p_j = +0 in padding columns; per cell
    c = fl32(fl32(p0 + p1) + fl32(p2 + p3)); then the two trees."""
    I = shape[1]
    ys = []
    for row in grid[:shape[0]]:
        partials = []
        for b in range(len(row) // MB):
            cells = []
            for k in range(16):
                p = []
                for i in range(4):
                    col = b * MB + 4 * k + i
                    if col >= I:
                        p.append(0.0)
                        continue
                    code, S, B = row[col]
                    w = f32(f32(S * code) + B)
                    a = 0.0 if abs(x[col]) < 2.0 ** -60 else x[col]
                    p.append(f32(w * a))
                cells.append(f32(f32(p[0] + p[1]) + f32(p[2] + p[3])))
            partials.append(d8_tree(cells))
        ys.append(d8_tree(partials))
    return ys


FLT_MAX = struct.unpack('<f', b'\xff\xff\x7f\x7f')[0]
X_KINDS = ('gauss', 'zeros', 'negzeros', 'below60', 'below40', 'ties', 'large')


def activation_block(rng, kind, width, f16):
    """`width` activations of one kind, as binary32 values (binary16 values if f16)."""
    scale = rng.randint(-8, 6) if f16 else rng.randint(-20, 20)
    if kind == 'gauss':
        vals = [math.ldexp(rng.gauss(0, 1), scale) for _ in range(width)]
    elif kind == 'zeros':
        vals = [0.0] * width
    elif kind == 'negzeros':
        vals = [-0.0] * width
    elif kind == 'below60':  # read as +0 by Class B (2^-60 itself is not), tiny for A
        vals = [rng.choice((1, -1)) * rng.choice((2.0 ** -61, 2.0 ** -100, 2.0 ** -149,
                                                  (2 - 2.0 ** -23) * 2.0 ** -61, 2.0 ** -60))
                for _ in range(width)]
    elif kind == 'below40':  # Class A's block floor: d = 0 unless 2^-40 itself appears
        vals = [rng.choice((1, -1)) * rng.choice((2.0 ** -41, (2 - 2.0 ** -23) * 2.0 ** -41,
                                                  2.0 ** -59, 2.0 ** -52))
                for _ in range(width)]
        if rng.randrange(3) == 0:
            vals[rng.randrange(width)] = 2.0 ** -40
    elif kind == 'ties':  # block maximum 127 * 2^s: e = s, and (k + 1/2) * 2^s ties
        vals = [math.ldexp(rng.randint(-127, 126) + 0.5, scale) for _ in range(width)]
        vals[rng.randrange(width)] = math.ldexp(rng.choice((127, -127)), scale)
    elif kind == 'ones':
        vals = [1.0] * width
    elif kind == 'cellties':  # for matvec_cell_ties: x = q (e = 0), row 0's codes 7 7 -8 -8
        vals = []
        for _ in range(0, width, 4):
            a, b, c, d = (rng.choice((125, 126, 127)) for _ in range(4))
            if rng.randrange(4) and (a + b - c - d) % 2 == 0:
                a = 126 if a != 126 else 125  # mostly odd is sums: exact ties
            vals += [float(a), float(b), float(-c), float(-d)]
        vals[0] = 127.0
    elif kind == 'large':
        vals = [rng.choice((1, -1)) * rng.uniform(1e3, 6e4) for _ in range(width)]
    elif kind == 'huge':
        vals = [rng.choice((1e30, -1e30, FLT_MAX, -FLT_MAX, 1.5, -2.0 ** 127))
                for _ in range(width)]
    elif kind == 'nonfinite':
        vals = [rng.choice((math.nan, math.inf, -math.inf, 1.0, -0.5)) for _ in range(width)]
    else:
        raise ValueError(kind)
    if f16:  # the nearest half (the halves of these kinds are finite)
        return [half_value(half_bits(v)) for v in vals]
    return [f32(v) for v in vals]


def half_bits(v):
    """IEEE binary16 bits of v rounded to nearest even (struct's 'e' format)."""
    if v != v:
        return 0x7E00
    try:
        return struct.unpack('<H', struct.pack('<e', v))[0]
    except OverflowError:
        return 0xFC00 if v < 0 else 0x7C00


def activations(rng, kind, I, batch, f16):
    """x [batch][I]: `kind` in every block, or for 'mixed' each block its own kind."""
    xs = []
    for _ in range(batch):
        x = []
        for b in range(0, I, MB):
            k = rng.choice(X_KINDS) if kind == 'mixed' else kind
            x += activation_block(rng, k, min(MB, I - b), f16)
        xs.append(x)
    return xs


class MatvecSet:
    def __init__(self, golden):
        self.golden = golden  # the GoldenSet whose must-decode containers are reused
        self.entries, self.files = [], {}

    def add(self, name, container, profile, shape, blocks_leaves, cls, batch, kind, f16,
            note):
        assert name not in self.files and not any(e['name'] == name for e in self.entries)
        rng = random.Random('sgfp4-golden-matvec:' + name)
        O, I = shape
        xs = activations(rng, kind, I, batch, f16)
        grid = expanded(shape, profile, blocks_leaves)
        xfile = 'matvec/%s.x.%s' % (name, 'f16' if f16 else 'f32')
        xbytes = b''.join(struct.pack('<%d%s' % (I, 'e' if f16 else 'f'), *x) for x in xs)
        entry = {'name': name, 'container': container, 'profile': profile, 'shape': list(shape),
                 'class': cls, 'batch': batch, 'x': xfile, 'x_dtype': 'f16' if f16 else 'f32',
                 'activations': kind}
        self.files[xfile] = xbytes
        ys = []
        if cls == 'a':
            q8 = b''
            for x in xs:
                q, d = d8_quantize(x)
                q8 += q8_bytes(q, d)
                ys.append(d8_product_a(grid, shape, q, d))
            entry['q8'] = 'matvec/%s.q8' % name
            self.files[entry['q8']] = q8
        else:
            ys = [d8_product_b(grid, shape, x) for x in xs]
        ybytes = b''.join(struct.pack('<%df' % O, *y) for y in ys)
        entry['y'] = 'matvec/%s.y.f32' % name
        entry['nan_results'] = sum(v != v for y in ys for v in y)
        entry['note'] = note
        self.files[entry['y']] = ybytes
        self.entries.append(entry)

    def reuse(self, decode_name, cls, batch, kind, f16, note):
        profile, shape, blocks_leaves, container = self.golden.decoded[decode_name]
        name = '%s_%s_%s' % (decode_name, cls, kind)
        self.add(name, container, profile, shape, blocks_leaves, cls, batch, kind, f16, note)

    def own(self, name, profile, shape, data, blocks_leaves, runs, note):
        ext = 'sgfp4' if profile == 'v2' else 'fp4'
        container = 'matvec/%s.%s' % (name, ext)
        self.files[container] = data
        for cls, batch, kind, f16 in runs:
            self.add('%s_%s_%s' % (name, cls, kind), container, profile, shape, blocks_leaves,
                     cls, batch, kind, f16, note)


def cell_ties_record(rng):
    """One UNIFORM_64 FP4 leaf, S = 2^15, Bias = 4: a Class A cell with |iq| in [2048, 4096)
    and odd is sums to an exact tie between two binary32 values (ulp 8 in [2^26, 2^27)), so
    row 0's cells round half to even both ways. Codes 7 / -8 on row 0 follow the sign pattern
    the activations of the 'ties' vectors below give (x = q, e = 0)."""
    leaf = random_leaf(rng, 0, 0, 64, 0)
    leaf.scale, leaf.bias = 0x7800, 0x4400
    for c in range(64):
        leaf.symbols[c] = 7 if c % 4 < 2 else 8  # nibble 8 = code -8
    return Record(0, [leaf])


def signed_zero_blocks(count):
    """v1 blocks whose every weight is -0: scale -0, bias -0, codes 0."""
    return [V1Block(Leaf(0, 0, 64, 0, 0x8000, 0x8000, [0] * 4096), b * 2048)
            for b in range(count)]


def add_matvec_vectors(m):
    R = lambda name: random.Random('sgfp4-golden:' + name)  # noqa: E731
    A, B = 'a', 'b'
    m.reuse('v1_fp4', A, 1, 'gauss', False, 'v1 FP4 block, Class A')
    m.reuse('v1_fp4', B, 2, 'mixed', False, 'v1 FP4 block, Class B, hostile blocks')
    m.reuse('v1_t158_reserved_symbol', A, 3, 'mixed', False,
            'v1 T158 with reserved symbols (code 0), Class A')
    m.reuse('v1_special_scales_biases', A, 2, 'mixed', False,
            'scale/bias 0, -0, subnormal, +-65504: zero signs and large cells, Class A')
    m.reuse('v1_special_scales_biases', B, 2, 'gauss', True,
            'scale/bias 0, -0, subnormal, +-65504, Class B with f16 activations')
    m.reuse('v1_shared_payloads', A, 1, 'ties', False,
            'shared v1 payloads; quantizer ties (round half to even)')
    m.reuse('v1_shape_130x200', A, 4, 'mixed', False, 'v1 130x200: 4 column blocks, batch 4')
    m.reuse('v1_shape_130x200', B, 3, 'mixed', True, 'v1 130x200, f16 activations')
    m.reuse('v1_shape_1x1', A, 2, 'gauss', False, 'a single weight; 63 padding columns')
    m.reuse('v1_shape_1x1', B, 1, 'gauss', False, 'a single weight; padding p_j = +0')
    m.reuse('v1_shape_3x130', B, 2, 'below60', False,
            '3x130, activations around the 2^-60 floor')
    m.reuse('v2_layout0_uniform64_fp4', A, 1, 'below40', False,
            'UNIFORM_64, activations around the 2^-40 block floor')
    m.reuse('v2_layout1_uniform32_mixed_modes', B, 2, 'mixed', False,
            'UNIFORM_32, FP4 and T158 leaves, Class B')
    m.reuse('v2_layout2_uniform16_t158', A, 2, 'mixed', False, 'UNIFORM_16 T158, Class A')
    m.reuse('v2_layout3_uniform8_fp4', B, 1, 'large', True, 'UNIFORM_8 FP4, f16 activations')
    m.reuse('v2_layout5_full4x4_mixed_modes', A, 2, 'mixed', False,
            'FULL_4X4, both modes: 16 leaves across a row')
    m.reuse('v2_layout5_full4x4_mixed_modes', B, 2, 'negzeros', False,
            'FULL_4X4, x = -0 everywhere (Class B reads +0)')
    m.reuse('v2_mixed_known_tree', A, 1, 'mixed', False, 'MIXED known tree, Class A')
    m.reuse('v2_mixed_known_tree', B, 1, 'zeros', False, 'MIXED known tree, x = +0')
    m.reuse('v2_mixed_full_split', B, 2, 'mixed', False, 'MIXED, 256 4x4 leaves in DFS order')
    m.reuse('v2_mixed_asymmetric', A, 3, 'ties', True, 'MIXED asymmetric, f16 ties')
    m.reuse('v2_mixed_random_trees', A, 16, 'mixed', False, 'random MIXED trees, batch 16')
    m.reuse('v2_mixed_random_trees', B, 5, 'mixed', False, 'random MIXED trees, batch 5')
    m.reuse('v2_special_scales_biases', A, 2, 'mixed', False,
            'v2 scale/bias specials incl. the masked bias, Class A')
    m.reuse('v2_special_scales_biases', B, 2, 'mixed', False, 'v2 scale/bias specials, B')
    m.reuse('v2_rounding', A, 2, 'large', False, 'S*q + B near 2^24 and beyond: cell rounding')
    m.reuse('v2_rounding', B, 2, 'large', False, 'large weights times large activations')
    m.reuse('v2_shape_130x200', A, 5, 'mixed', True, 'v2 130x200, f16, batch 5')
    m.reuse('v2_shape_130x200', B, 4, 'mixed', False, 'v2 130x200, batch 4')
    m.reuse('v2_shape_64x65', A, 1, 'gauss', False, 'one real column in the second block')
    m.reuse('v2_shape_65x64', B, 2, 'gauss', False, 'one row in the second block row')
    m.reuse('v2_shape_3x130', A, 2, 'mixed', False, '3x130, 3 blocks: the tree pads to 4')
    m.reuse('v2_block_count_pad', A, 2, 'mixed', False, '5 column blocks: the tree pads to 8')
    m.reuse('v2_block_count_pad', B, 2, 'mixed', False, '5 column blocks, Class B')
    m.reuse('v2_multiblock_every_layout', A, 2, 'mixed', False, 'every layout in one row')
    m.reuse('v2_multiblock_every_layout', B, 2, 'huge', False,
            '1e30, FLT_MAX, -2^127: products overflow to infinities (and NaN where they '
            'meet): any NaN matches')
    m.reuse('v2_record_overlap', B, 1, 'nonfinite', False,
            'NaN and infinite activations: NaN or infinite results (Class B, IEEE)')

    n = 'matvec_wide'
    rng = R(n)
    recs = [random_record(rng) for _ in range(18)]
    m.own(n, 'v2', (3, 1100), v2_stream(recs), [r.leaves for r in recs],
          [(A, 2, 'mixed', False), (B, 2, 'mixed', False), (A, 1, 'gauss', True)],
          '3x1100: 18 column blocks, the block tree pads to 32 (depth 5)')
    n = 'matvec_cell_ties'
    rec = cell_ties_record(R(n))
    m.own(n, 'v2', (64, 64), v2_stream([rec]), [rec.leaves],
          [(A, 1, 'cellties', False), (B, 1, 'cellties', False)],
          'S = 2^15, Bias = 4: Class A cells that are exact ties (round half to even, both '
          'ways) and large Class B products')
    for cols in (256, 190):
        n = 'matvec_signed_zeros_%d' % cols
        blocks = signed_zero_blocks(-(-cols // MB))
        m.own(n, 'v1', (2, cols), v1_container(blocks), [[b.leaf] for b in blocks],
              [(A, 1, 'ones', False), (B, 1, 'ones', False), (B, 1, 'negzeros', False)],
              'every weight -0: results -0 only where no +0 padding joins (256 columns: '
              '-0; 190: +0, the block tree pads to 4 and Class B padding p_j = +0)')


def matvec_files(golden):
    """The files of golden/matvec (containers of their own, x, q8, y, manifest.json)."""
    m = MatvecSet(golden)
    add_matvec_vectors(m)
    manifest = {'format': 'sgfp4-golden-matvec', 'version': 1,
                'generator': 'tools/gen_golden.py', 'vectors': m.entries}
    files = dict(m.files)
    files['matvec/manifest.json'] = (json.dumps(manifest, indent=1) + '\n').encode()
    return files


# ---- main ----------------------------------------------------------------------------------


UNCOVERED = [{
    'status': 'V2_SPLIT_OVERRUN',
    'note': 'cannot occur: a 64x64 macroblock has 1 + 4 + 16 + 64 = 85 nodes of size >= 8, '
            'so a fully split map reads bits 0..84 and never past bit 84; the rule exists '
            'only as a defensive check'}]


def build(dump_expected=None):
    g = GoldenSet(dump_expected)
    add_v2_decode_vectors(g)
    add_v1_decode_vectors(g)
    add_reject_vectors(g)
    manifest = {'format': 'sgfp4-golden', 'version': 1,
                'generator': 'tools/gen_golden.py',
                'vectors': [e for e, _, _ in g.vectors],
                'uncovered': UNCOVERED}
    files = {rel: data for _, rel, data in g.vectors}
    files['manifest.json'] = (json.dumps(manifest, indent=1) + '\n').encode()
    files.update(matvec_files(g))
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'golden'),
                    help='output folder (default: golden/ of the repository)')
    ap.add_argument('--dump-expected', metavar='DIR',
                    help='also write each must-decode vector\'s expected NAME.f32 there')
    args = ap.parse_args()
    if args.dump_expected:
        os.makedirs(args.dump_expected, exist_ok=True)
    files = build(args.dump_expected)
    for rel, data in sorted(files.items()):
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(data)
    total = sum(len(d) for d in files.values())
    n = len(files) - 1
    print('gen_golden: %d vectors, %d bytes in %s' % (n, total, args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
