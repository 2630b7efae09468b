#!/usr/bin/env python3
"""Print the configure arguments (enable_X=no) that leave out every Wine
module the guest's Wine does not need.

  disable-modules.py SRC ROOTS

SRC: an unpacked Wine source.  ROOTS: a file naming, one per line (# starts
a comment), the module directories to keep (tests/wine/build: tests/wine/
modules).  Kept as well: everything they import or delay-import
(IMPORTS / DELAYIMPORTS / PARENTSRC of their Makefile.in, transitively,
static libraries such as libs/uuid included),
the static libraries every module may link, and the bundled libraries
(libs/*) a kept module names with $(X_PE_LIBS).  Test directories are not
configure switches (they follow --disable-tests): build-wine builds only
the test programs it names."""
import os
import re
import sys

src, roots_file = sys.argv[1:3]
roots = [l.split('#')[0].strip() for l in open(roots_file)]
roots = [r for r in roots if r]
cfg = open(os.path.join(src, 'configure')).read()
switch = re.findall(r'^wine_fn_config_makefile (\S+) (enable_\w+)$', cfg, re.M)


def makefile_in(d):
    p = os.path.join(src, d, 'Makefile.in')
    return open(p).read().replace('\\\n', ' ') if os.path.exists(p) else ''


def var(d, name):
    m = re.search(r'^%s\s*=(.*)$' % name, makefile_in(d), re.M)
    return m.group(1).split() if m else []


def module_dir(name):
    for d in ('dlls/' + name, 'programs/' + name, 'libs/' + name):
        if os.path.isdir(os.path.join(src, d)):
            return d
    return None


for r in roots:
    if not os.path.isdir(os.path.join(src, r)):
        sys.exit('disable-modules.py: %s: no such directory in %s' % (r, src))
keep, stack = set(), list(roots)
while stack:
    d = stack.pop()
    if d in keep:
        continue
    keep.add(d)
    for t in var(d, 'IMPORTS') + var(d, 'DELAYIMPORTS'):
        if not t.startswith('$'):
            dd = module_dir(t.lstrip('-'))
            if dd:
                stack.append(dd)
    for t in var(d, 'PARENTSRC'):
        stack.append(os.path.normpath(os.path.join(d, t)))
libs = {os.path.basename(d).upper().replace('-', '_'): d
        for d, _ in switch if d.startswith('libs/')}
for d, _ in switch:
    if not d.startswith('libs/') and 'STATICLIB' in makefile_in(d):
        keep.add(d)
grown = True
while grown:
    grown = False
    for d in list(keep):
        for m in re.findall(r'\$\((\w+)_PE_LIBS\)', makefile_in(d)):
            if m in libs and libs[m] not in keep:
                keep.add(libs[m])
                grown = True
for d, v in switch:
    if v != 'enable_tests' and d not in keep:
        print('%s=no' % v)
