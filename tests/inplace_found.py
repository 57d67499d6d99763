# ruff: noqa: E501  (the programs as the generator wrote them)
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
    32000488: '''\
@pbc.syntax
def g0(x, y, k, c):
    return (65535 + k)
@pbc.syntax
def g1(x, y, k, c):
    return (y * k)
@pbc.syntax
def g2(x, y, k, c):
    w = y
    return (w + 0)
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(0) + a
    t = UInt32(65535)
    y = a
    z = s * 3
    u = [UInt32(7) + a, UInt32(4294967295)]
    m = (k & 2) != 0
    def h():
        nonlocal y
        y = (s + 0)
    if ((s << (v.x & 7)) ^ k) % 3 == 0:
        if (k & 1) != 0:
            s = pbc.switch(((y & o.p) ^ k) % 4, (g0, g1, g2), t, y, k, u)
        if ((65535 + k) ^ k) > z:
            h()
        s = d['p']
    return (a, b, s, t, y, z, m, v, lst, d, o, u)
''',
    33000576: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(3) + a
    t = UInt32(65535)
    y = a
    z = s * 2
    m = (((lst[0] << (o.p & 7)) ^ k) & 1) == 0
    c1 = UInt32(0)
    while pbc.hint(c1 < (v.x & 3), max_iterations=8, mode='evaluated'):
        c1 += 1
        y >>= (((5 + k) >> (((0 + k) | z) & 7)) & 7)
        if pbc.hint(((v[2] << (a & 7)) ^ k) > a, mode='symbolic'):
            y = (pbc.minimum(z, k) << (pbc.select((((7 + k) >> (z & 7)) ^ k) > o.q, s, o.q) & 7))
        c3 = UInt32(0)
        while pbc.hint(c3 < (k & 3), max_iterations=8, mode='evaluated', compress=True, include=[a, b, s, t, y, z, v, lst, d, o, k, m, c1]):
            c3 += 1
            if pbc.hint(m, mode='evaluated'):
                break
    return (a, b, s, t, y, z, m, v, lst, d, o)
''',
    60000329: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = UInt32(100) + a
    t = UInt32(0)
    y = a
    z = lst[0]
    m = ((pbc.maximum(k, b) ^ k) & 1) == 0
    tn = TensorXu(a + 0)
    for c1 in pbc.hint(range((lst[0] & 3)), max_iterations=8):
        for c2 in pbc.hint(range((a & 3)), max_iterations=8):
            y <<= (((v.y >> (d['p'] & 7)) << (o.p & 7)) & 7)
    return (a, b, s, t, y, z, m, v, lst, d, o, tn)
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
    21100056: '''\
@pbc.syntax
def g0(x, y, k, c):
    w = Float64(0.214) + y
    pbc.switch((k * 1 + 3) % 4, CALLS, c[1], w)
    return ((y / (1.5 + x * x)) + Float64(k))
@pbc.syntax
def g1(x, y, k, c):
    w = Float64(0.002) + y
    c[1] -= y
    return (pbc.cos(c[0]) * (w * (0.310 + Float64(k)) * 0.5))
@pbc.syntax
def g2(x, y, k, c):
    w = Float64(0.801) + y
    c[0] = (x - (w + x))
    c[1] += c[1]
    return (-1.591 + Float64(k))
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-1.469) + a
    t = Float64(-0.907)
    y = a
    z = s * -0.701
    u = [Float64(1.967) + a, Float64(1.624)]
    m = (k & 1) != 0
    def h():
        d['p'] *= (pbc.select((k & 1) != 0, pbc.sin(t), (pbc.cos((-0.223 + Float64(k))) * a)) * 0.5)
        o.p -= ((v.x * Float64(k) * 0.5) / (1.5 + lst[1] * lst[1]))
    def r(x):
        nonlocal b
        b = ((1.998 + Float64(k)) + 0.0)
        return (((s - z) * b * 0.5) + 0.0)
    t -= pbc.sin((0.775 + Float64(k)))
    t /= (1.5 + (0.258 + Float64(k)) * (0.258 + Float64(k)))
    if (k % 3) == 2:
        v.x = (Float64(k) + (0.467 + Float64(k)))
        pbc.switch((k * 1 + 0) % 3, (r, r), b, mode='symbolic')
        lst[0] = v[2]
    elif (k % 3) == 2:
        y = pbc.switch((k * 1 + 0) % 4, (g0, g1, g2), o.p, z, k, u, mode='symbolic')
        d['p'] = v.x
        lst[0] = z
    else:
        if pbc.hint((k % 3) == 0, mode='symbolic'):
            b += ((Float64(k) / (1.5 + s * s)) * o.p * 0.5)
        elif (k % 3) == 0:
            v *= s
        h()
        h()
    z -= z
    s += a
    y = (-0.427 + Float64(k))
    return (a, b, s, t, y, z, m, v, lst, d, o, u)
''',
    21100185: '''\
@pbc.syntax
def g0(x, y, k, c):
    w = y
    y = w
    pbc.switch((k * 1 + 6) % 4, CALLS, y, c[0], mode='symbolic')
    return (c[1] + 0)
@pbc.syntax
def g1(x, y, k, c):
    w = Float64(-1.457) + y
    pbc.switch((k * 5 + 3) % 4, CALLS, c[1], y, mode='symbolic')
    y = w
    y -= (((1.090 + Float64(k)) * (-1.933 + Float64(k)) * 0.5) - pbc.sin(c[1]))
    return (x + (pbc.cos(x) * (-1.239 + Float64(k))))
@pbc.syntax
def g2(x, y, k, c):
    w = Float64(-1.883) + y
    pbc.switch((k * 1 + 4) % 4, CALLS, w, c[0])
    return (pbc.select(k > 1, w, x) * (y - c[1]) * 0.5)
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-0.832) + a
    t = Float64(-1.683)
    y = Float64(0.889)
    z = s * 0.588
    u = [Float64(-1.989) + a, Float64(-1.408)]
    m = (k & 3) != 0
    def h():
        v.x = (((-0.658 + Float64(k)) - v.y) - (Float64(k) + a))
    def r(x):
        nonlocal t
        t /= (1.5 + x * x)
        return (Float64(k) + 0.0)
    b = (-1.964 + Float64(k))
    pbc.switch((k * 3 + 5) % 3, (r, r), t, mode='symbolic')
    c1 = UInt32(0)
    while pbc.hint(c1 < 3, max_iterations=8):
        c1 += 1
        v *= lst[1]
        pbc.switch((k + c1) % 4, (g0, g1, g2), lst[1], s, k, u)
        v[2] -= (pbc.cos((y * o.p * 0.5)) * Float64(k))
    y += ((Float64(k) - (-1.107 + Float64(k))) * (lst[0] / (1.5 + a * a)) * 0.5)
    a *= (t * 0.5)
    r(v[2])
    return (a, b, s, t, y, z, m, v, lst, d, o, u)
''',
    21100062: '''\
@pbc.syntax
def g0(x, y, k, c):
    w = y
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8):
        c1 += 1
        c2 = UInt32(0)
        while pbc.hint(c2 < (k % 4), max_iterations=8):
            c2 += 1
            y *= (Float64(k) * 0.5)
    y -= pbc.sin((1.843 + Float64(k)))
    if (k % 3) == 1:
        x = (c[1] + 0.0)
    elif pbc.hint(k > 5, mode='symbolic'):
        if k > 7:
            c[0] -= (pbc.cos((w + y)) * pbc.select((k & 3) != 0, w, (-1.937 + Float64(k))))
    else:
        x = (w + pbc.select((k % 3) == 2, Float64(k), y))
    return (y + 0)
@pbc.syntax
def g1(x, y, k, c):
    w = y
    x = w
    return (c[1] + 0)
@pbc.syntax
def g2(x, y, k, c):
    w = Float64(-0.207) + y
    c[0] = (pbc.select((k % 3) == 2, (1.255 + Float64(k)), (-0.988 + Float64(k))) * (x * (-0.496 + Float64(k)) * 0.5) * 0.5)
    return ((pbc.cos(w) * (1.733 + Float64(k))) / (1.5 + (y * Float64(k) * 0.5) * (y * Float64(k) * 0.5)))
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(-0.914) + a
    t = Float64(-1.496)
    y = a
    z = lst[0]
    u = [Float64(-1.690) + a, Float64(-1.589)]
    m = (k & 3) != 0
    def h():
        o.p /= (1.5 + (s / (1.5 + lst[0] * lst[0])) * (s / (1.5 + lst[0] * lst[0])))
        v.x /= (1.5 + (1.772 + Float64(k)) * (1.772 + Float64(k)))
    c1 = UInt32(0)
    while pbc.hint(c1 < (k & 3), max_iterations=8, mode='symbolic'):
        c1 += 1
        t = (pbc.sin((1.409 + Float64(k))) / (1.5 + (Float64(k) * Float64(k) * 0.5) * (Float64(k) * Float64(k) * 0.5)))
        h()
        v -= t
    if pbc.hint((k % 3) == 2, mode='symbolic'):
        lst[1] *= ((s / (1.5 + s * s)) * 0.5)
    else:
        lst[0] = b
    v.y = pbc.switch((k * 4 + 4) % 4, (g0, g1, g2), o.p, lst[0], k, u)
    pbc.switch((k * 3 + 2) % 4, CALLS, z, s, mode='symbolic')
    o.p -= pbc.sin(s)
    a = (pbc.cos(t) * pbc.sin((-0.829 + Float64(k))))
    return (a, b, s, t, y, z, m, v, lst, d, o, u)

''',
    21100145: '''\
@pbc.syntax
def g0(x, y, k, c):
    return (((0.273 + Float64(k)) / (1.5 + (-0.575 + Float64(k)) * (-0.575 + Float64(k)))) / (1.5 + (-1.748 + Float64(k)) * (-1.748 + Float64(k))))
@pbc.syntax
def g1(x, y, k, c):
    return (x + 0)
@pbc.syntax
def g2(x, y, k, c):
    return (w + 0)
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(1.390) + a
    t = Float64(-0.395)
    y = a
    z = lst[0]
    u = [Float64(1.641) + a, Float64(1.643)]
    m = k > 4
    def h():
        d['p'] = (y + 0.0)
    def r(x):
        nonlocal a, t
        t = (((x / (1.5 + s * s)) / (1.5 + pbc.select((k & 1) != 0, (0.847 + Float64(k)), z) * pbc.select((k & 1) != 0, (0.847 + Float64(k)), z))) + 0.0)
        return ((0.468 + Float64(k)) + 0.0)
    c1 = UInt32(0)
    while pbc.hint(c1 < (k % 4), max_iterations=8):
        c1 += 1
        if k > 7:
            if (k % 3) == 2:
                d['p'] = b
        else:
            a = pbc.switch((k * 4 + 3) % 3, (r, r), lst[1], mode='symbolic')
    return (a, b, s, t, y, z, m, v, lst, d, o, u)
''',
    120: '''\
def f(a, b, v, lst, d, o, k, acc):
    s = Float64(1.744) + a
    t = Float64(-1.760)
    y = a
    z = lst[0]
    u = [Float64(-0.433) + a, Float64(-0.272)]
    m = (k & 2) != 0
    j = k & 7
    if k > 6:
        b += (0.536 + Float64(k))
    else:
        z = y
    c1 = UInt32(0)
    while pbc.hint(c1 < (k % 4), max_iterations=8, mode='evaluated', compress=True, include=[a, b, s, t, y, z, v, lst, d, o, k, m, u, j]):
        c1 += 1
        pbc.scatter_add(acc, (pbc.select((c1 + k) % 3 == 0, d['p'], Float64(k)) * (z + (-0.016 + Float64(k))) * 0.5), j)
        j ^= 1
    return (a, b, s, t, y, z, m, v, lst, d, o, u, j)
''',
}
