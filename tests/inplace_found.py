"""Programs the random-program tests (tests/test_inplace_fuzz.py) found wrong, reduced:
each ran against the oracle on the inputs of its seed (programs.inputs). Keyed by seed."""

FOUND = {
    5: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(5) + a
    t = UInt32(7)
    y = UInt32(4294967295)
    z = lst[0]
    if (o.q & o.p) > o.q:
        v.x |= s
    else:
        if (0 + k) % 3 == 2:
            lst[0] = ((k & k) % (o.q | 1))
        if (k & 3) != 0:
            lst[0] ^= ((a % ((0 + k) | 1)) >> (d['p'] & 7))
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    7: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(7) + a
    t = UInt32(2)
    y = a
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        if (v.x + t) > o.q:
            b >>= ((2 + k) & 7)
        elif (k & 1) != 0:
            c2 = UInt32(0)
            while pbc.hint(c2 < (v.y & 3), max_iterations=8):
                c2 += 1
                t = o.p
        else:
            z = d['p']
        lst[0] = (s << ((v.y - lst[1]) & 7))
        c3 = UInt32(0)
        while pbc.hint(c3 < (k & 3), max_iterations=8):
            c3 += 1
            if (v.y | b) % 3 == 1:
                if (k & 3) != 0:
                    v.y ^= a
                else:
                    if v.x > z:
                        break
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    11: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(65535) + a
    t = UInt32(4294967295)
    y = UInt32(65535)
    z = lst[0]
    if ((1 + k) & t) > a:
        y %= (lst[1] | 1)
    elif ((1 + k) ^ k) % 3 == 0:
        v += v.x
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    37: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(1) + a
    t = UInt32(4294967295)
    y = a
    z = s * 65535
    c3 = UInt32(0)
    while pbc.hint(c3 < 3, max_iterations=8):
        c3 += 1
        y += (((5 + k) & v.y) & (7 + k))
        a ^= ((d['p'] ^ (2 + k)) * ((2 + k) - z))
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    42: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(1) + a
    t = UInt32(0)
    y = UInt32(2)
    z = lst[0]
    if ((((3 + k) | (100 + k)) ^ k) & 1) == 0:
        if (k ^ k) > v.y:
            if (((3 + k) // ((7 + k) | 1)) ^ k) > b:
                pass
            else:
                c2 = UInt32(0)
                while pbc.hint(c2 < (v.x & 3), max_iterations=8):
                    c2 += 1
                    lst[0] = (((0 + k) - k) | (y - (7 + k)))
    lst[0] ^= (o.q % ((t - (1 + k)) | 1))
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    91: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(1) + a
    t = UInt32(2)
    y = UInt32(100)
    z = s * 65535
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        y = v.x
        v *= v.x
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    140: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(1) + a
    t = UInt32(0)
    y = a
    z = s * 0
    if (k & 3) != 0:
        pbc.switch(((k | v.y) ^ k) % 4, CALLS, s, t)
    else:
        z //= (((a * (100 + k)) | (v[2] | (3 + k))) | 1)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    159: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(100) + a
    t = UInt32(2)
    y = UInt32(3)
    z = lst[0]
    if (k & 2) != 0:
        v += b
    elif (k & 1) != 0:
        return (a, b, s, t, y, z, v, lst, d, o)
    y = v.x
    y >>= ((v[2] >> ((7 + k) & 7)) & 7)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    171: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(4294967295) + a
    t = UInt32(100)
    y = UInt32(65535)
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        if ((s * lst[0]) ^ k) > z:
            o.q <<= (k & 7)
        lst[0] = t
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    189: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(65535) + a
    t = UInt32(5)
    y = a
    z = s * 100
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        lst[1] = v.y
    c3 = UInt32(0)
    while pbc.hint(c3 < (k & 3), max_iterations=8):
        c3 += 1
        v ^= b
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    251: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = t = y = z = a
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        c3 = UInt32(0)
        while pbc.hint(c3 < (o.p & 3), max_iterations=8):
            c3 += 1
            if (d['p'] & 1) == 1:
                b = v.y + 5
        b *= lst[0]
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    271: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(65535) + a
    t = UInt32(7)
    y = a
    z = lst[0]
    c2 = UInt32(0)
    while pbc.hint(c2 < 3, max_iterations=8):
        c2 += 1
        lst[0] &= ((100 + k) - k)
        z = o.p
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    410: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(2) + a
    t = UInt32(5)
    y = a
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        t = lst[0]
        lst[0] |= y
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    3689: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(4294967295) + a
    t = UInt32(3)
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        a = b
        b ^= b
    y = ((lst[0] + k) - ((7 + k) // (o.q | 1)))
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    101569: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(5) + a
    t = UInt32(5)
    y = a
    z = s * 3
    a = v.y
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        if ((o.p // ((7 + k) | 1)) ^ k) > d['p']:
            v -= v.x
        else:
            v.x = ((y // (d['p'] | 1)) << (((4294967295 + k) >> ((100 + k) & 7)) & 7))
        b %= ((a % (y | 1)) | 1)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    103873: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(100) + a
    t = UInt32(0)
    y = UInt32(4294967295)
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < (v[2] & 3), max_iterations=8):
        c1 += 1
        o.q *= (t * (t % ((3 + k) | 1)))
    v[2] = k
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    153903: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(7) + a
    t = UInt32(7)
    y = UInt32(3)
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < (y & 3), max_iterations=8):
        c1 += 1
        if (((4294967295 + k) * a) ^ k) > o.p:
            if (y ^ k) > lst[1]:
                lst[0] = (lst[0] + 0)
        else:
            c2 = UInt32(0)
            while pbc.hint(c2 < (o.q & 3), max_iterations=8):
                c2 += 1
                z <<= (((z * lst[1]) + y) & 7)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    155059: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = t = z = a
    b = a
    y = a
    c2 = UInt32(0)
    while pbc.hint(c2 < 1, max_iterations=8):
        c2 += 1
        c3 = UInt32(0)
        while pbc.hint(c3 < 0, max_iterations=8):
            c3 += 1
            b = (65535 + k)
        if (k & 1) == 0:
            pbc.switch(k % 4, CALLS, lst[0], y)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    107786: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(4294967295) + a
    t = UInt32(3)
    y = a
    z = s * 0
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        if (((d['p'] << (v.y & 7)) ^ k) & 1) == 0:
            y = (y + 0)
        pbc.switch(((o.q | d['p']) ^ k) % 4, CALLS, b, a)
    return (a, b, s, t, y, z, v, lst, d, o)
''',
}

# Float64 programs whose values or derivatives (forward and reverse against finite
# differences) were wrong.
FOUND_FLOAT = {
    600002: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(1.761) + a
    t = Float64(-1.374)
    y = a
    z = s * -0.167
    c1 = UInt32(0)
    while pbc.hint(c1 < (k % 4), max_iterations=8):
        c1 += 1
        v += o.q
        v *= z
    if k > 1:
        if (k & 3) != 0:
            o.q = v.y
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    # (a loop body binding lst[0] to o.p and changing it in place: o.p, from outside the
    # state, got derivatives in the body, which the loop dropped (values and derivatives))
    2576: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(1.802) + a
    t = Float64(0.896)
    y = a
    z = lst[0]
    if k > 6:
        s = lst[1]
    else:
        if (k & 1) != 0:
            y += (s / (1.5 + (pbc.cos(z) * v[2]) * (pbc.cos(z) * v[2])))
        elif k > 5:
            if k > 5:
                v.y -= pbc.sin((Float64(k) / (1.5 + a * a)))
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        lst[0] = o.p
        lst[0] += (pbc.cos((Float64(k) - t)) * (v.y + z))
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    # (y = a before a loop that rebinds a and changes y in place: the derivative loops
    # kept them one object, where the loop itself gave a a new one)
    2585: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-1.576) + a
    t = Float64(1.641)
    y = a
    z = s * -1.742
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        if (k & 1) != 0:
            if (k & 3) != 0:
                if (c1 + k) % 3 == 2:
                    if (k % 3) == 0:
                        break
                else:
                    y *= (((1.278 + Float64(k)) + pbc.sin(Float64(k))) * 0.5)
        else:
            a = v.y
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    # (a call changing in place, in a loop, arrays the loop only reads, while
    # derivatives flowed: the state the body left in o.q was lost)
    2586: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-0.822) + a
    t = Float64(-1.308)
    y = Float64(-0.815)
    z = lst[0]
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        pbc.switch((k * 2 + 7) % 4, CALLS, a, lst[1])
        o.q = o.p
    return (a, b, s, t, y, z, v, lst, d, o)
''',
    # (a scatter-add of y = a in a loop whose body then changes a in place: the derivative
    # read the value's tangent after the change)
    572555: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-1.657) + a
    t = Float64(1.878)
    y = a
    z = lst[0]
    m = (k % 3) == 0
    c1 = UInt32(0)
    while pbc.hint(c1 < (k % 4), max_iterations=8):
        c1 += 1
        pbc.scatter_add(acc, y, (k * 1 + 6) % len(acc))
        if (k & 1) != 0:
            v += v.y
        elif (c1 + k) % 3 == 2:
            a /= (1.5 + v.y * v.y)
    return (a, b, s, t, y, z, m, v, lst, d, o)
''',
    8300838: '''\
@pbc.syntax
def g0(x, y, k, rng):
    w = Float64(-0.609) + y
    x *= rng.next_float64()
    return ((w + (-0.717 + Float64(k))) - x)
@pbc.syntax
def g1(x, y, k, rng):
    w = Float64(0.311) + y
    return pbc.select((k % 3) == 0, (w / (1.5 + Float64(k) * Float64(k))), w)
@pbc.syntax
def g2(x, y, k, rng):
    return ((y - x) * ((-1.790 + Float64(k)) / (1.5 + y * y)) * 0.5)
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-1.737) + a
    t = Float64(0.597)
    y = a
    z = s * -1.080
    m = (k % 3) == 1
    rng = PCG32(len(acc))
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        pbc.switch((k + c1) % 4, (g0, g1, g2), s, t, k, rng)
    return (a, b, s, t, y, z, m, v, lst, d, o)
''',
}
