# SPDX-License-Identifier: MIT
# The binding's version: the libsgfp4 release it was written against (CMakeLists.txt's
# project VERSION; a test keeps the two equal).
__version__ = "0.1.0"
