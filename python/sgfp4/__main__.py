# SPDX-License-Identifier: MIT
"""`python3 -m sgfp4`: which binding and library are in use, and a round trip through them."""

import numpy as np

import sgfp4


def main():
    print(f"sgfp4 {sgfp4.__version__} (numpy {np.__version__})")
    print(f"libsgfp4 {sgfp4.library_version()} from {sgfp4.library_path()}, "
          f"decode kernels: {sgfp4.backend_name()}")
    w = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    blob = sgfp4.encode(w, target_bpw=4.5)
    with sgfp4.open(blob, w.shape) as t:
        d = t.decode()
        same = np.array_equal(d, t.decode(backend="scalar"))
        print(f"round trip: 256x512 float32 -> {len(blob)} bytes "
              f"({t.info.bits_per_weight:.3f} bits per weight), relative L2 error "
              f"{np.linalg.norm(d - w) / np.linalg.norm(w):.4f}, "
              f"fast kernels {'==' if same else '!='} scalar reference")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
