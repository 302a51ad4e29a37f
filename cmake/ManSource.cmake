# Writes the markdown source of the man page sgfp4(1) from docs/cli.md (run with cmake -P):
# a title line and NAME / SYNOPSIS sections first, then cli.md with its headings raised one
# level (its sections become the page's sections) and its links as plain text; the other
# pages it names (docs/NAME.md) by their name in DOCDIR, where `cmake --install` puts them.
#   cmake -DIN=docs/cli.md -DOUT=sgfp4.1.md -DVERSION=0.1.0 -DDOCDIR=/usr/local/share/doc/sgfp4
#         -P ManSource.cmake
# SPDX-License-Identifier: MIT
file(READ ${IN} text)
# the first line is the document's title: DESCRIPTION takes its place
string(REGEX REPLACE "^# [^\n]*\n" "# DESCRIPTION\n" text "${text}")
string(REGEX REPLACE "\n## " "\n# " text "${text}")
string(REGEX REPLACE "\n### " "\n## " text "${text}")
# [text](target) -> text (links mean nothing in a man page; the text of a link to another
# page is that page's name), and docs/NAME.md -> NAME.md (SEE ALSO says where they are)
string(REGEX REPLACE "\\[([^]\n]*)\\]\\([^)\n]*\\)" "\\1" text "${text}")
string(REPLACE "docs/" "" text "${text}")
file(WRITE ${OUT} "% SGFP4 1 \"\" \"sgfp4 ${VERSION}\" \"User Commands\"

# NAME
sgfp4 - encode, decode, verify and inspect SGFP4 weight containers and quantized models

# SYNOPSIS
**sgfp4** *COMMAND* [*options*] [*IN*]

**sgfp4 help** *COMMAND*

${text}
# SEE ALSO
**zstd**(1). The pages this one names (format.md, model.md, encoder.md, matvec.md, api.md
and the others) are installed in ${DOCDIR}.
")
