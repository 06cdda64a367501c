"""Kubernetes' CEL libraries evaluate their documented examples to the documented values.

The examples are those of the libraries' documentation (kubernetes.io/docs/reference/using-api/cel/
and the doc comments of ``staging/src/k8s.io/apiserver/pkg/cel/library/*.go``), evaluated in the
newest Kubernetes kaffinity knows; each case is an expression and its value, or the error it must
end in. Opaque values (quantities, IPs...) are compared through their functions, as they are in
policies.
"""

from __future__ import annotations

import datetime

import pytest

cel_environment = pytest.importorskip("kaffinity.policy.cel.environment")

NEWEST = "1.37"
#: Marks an expected CEL error (evaluation ends in one) rather than a value.
ERROR = object()
COMPILE_ERROR = object()


def evaluate(expression: str, kube_version: str = NEWEST, data: dict[str, object] | None = None) -> object:
    compiled = cel_environment.compile_expression(expression, kube_version, {})
    return compiled.evaluate(data or {})


def evaluates_to(expression: str, expected: object) -> None:
    if expected is COMPILE_ERROR:
        with pytest.raises(cel_environment.CelCompileError):
            evaluate(expression)
    elif expected is ERROR:
        with pytest.raises(cel_environment.CelEvaluationError):
            evaluate(expression)
    else:
        found = evaluate(expression)
        assert found == expected and type(found) is type(expected), (expression, found)


LISTS = [
    ("[1, 2, 3].isSorted()", True),
    ("['a', 'b', 'b', 'c'].isSorted()", True),
    ("[2.0, 1.0].isSorted()", False),
    ("[1].isSorted()", True),
    ("[].isSorted()", True),
    ("[1, 3].sum()", 4),
    ("[1.0, 3.0].sum()", 4.0),
    ("[].sum()", 0),
    ("[1, 3].min()", 1),
    ("[1, 3].max()", 3),
    ("[].min()", ERROR),
    ("[1].min()", 1),
    ("([0] + []).min()", 0),
    ("['b', 'a'].max()", "b"),
    ("[1, 2, 2, 3].indexOf(2)", 1),
    ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2),
    ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('string')", -1),
    ("[[1], [2]].indexOf([2])", 1),
    ("[9223372036854775807, 1].sum()", ERROR),
    # the oracle (issue 35): typed by the checker, sum/min/max answer in the element type
    ("[duration('1m'), duration('1s')].sum()", datetime.timedelta(seconds=61)),
    ("[duration('1m'), duration('1s')].min()", datetime.timedelta(seconds=1)),
    (
        "[timestamp('2020-01-01T00:00:00Z'), timestamp('2019-01-01T00:00:00Z')].max()",
        datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
    ),
    ("[duration('1s')].filter(d, false).sum()", datetime.timedelta(0)),
    ("[1.0].filter(d, false).sum()", 0.0),
    ("[1u, 2u].sum() == 3u", True),  # a uint: 3 == 3u would be a compile error
    ("[1u].filter(d, false).sum() == 0u", True),
    ("[18446744073709551615u, 1u].sum()", ERROR),  # unsigned integer overflow
    ("[duration('1s')].filter(d, false).min()", ERROR),  # min called on empty list
    ("dyn([duration('1s')]).sum()", ERROR),  # dyn: not supported (differences.yaml)
    ("[b'a', b'b'].min()", bytearray(b"a")),
    (
        "[-5, -9223372036854775808, 7].sum()",
        ERROR,
    ),  # the oracle: cel-go overflows on the way  # the oracle (issue 35): bytes are comparable
    ("[b'b', b'a'].isSorted()", False),
]

REGEX = [
    ("'abc 123'.find('[0-9]+')", "123"),
    ("'abc 123'.find('xyz')", ""),
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'123 abc 456'.findAll('[0-9]+', 0)", []),
    ("'123 abc 456'.findAll('xyz')", []),
    ("'abc 123'.find('[0-9]*')", ""),
    ("'1, 2, 3, 4'.findAll('[0-9]*')", ["1", "", "2", "", "3", "", "4"]),  # Go's FindAllString
    ("'a(b)'.findAll('(a)|(b)')", ["a", "b"]),  # whole matches, not groups
    ("'ab'.find('a\\\\z')", ""),
    ("'ba'.find('a\\\\z')", "a"),
    # a constant pattern is compiled with the program (regex.go FindRegexOptimization): the
    # oracle fails building it, kaffinity when compiling
    ("'abc'.find('(?=b)')", COMPILE_ERROR),  # RE2 has no look-ahead
    ("'aa'.find('(a)\\\\1')", COMPILE_ERROR),  # nor back-references
    ("'abc'.find('[')", COMPILE_ERROR),
]

URLS = [
    ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True),
    ("isURL('/absolute-path')", True),
    ("isURL('https://a:b:c/')", False),
    ("isURL('../relative-path')", False),
    ("isURL('')", False),
    ("url('https://a:b:c/')", ERROR),
    ("url('/path').getScheme()", ""),
    ("url('https://example.com/').getScheme()", "https"),
    ("url('https://example.com:80/').getHost()", "example.com:80"),
    ("url('https://example.com/').getHost()", "example.com"),
    ("url('https://[::1]:80/').getHost()", "[::1]:80"),
    ("url('https://[::1]/').getHost()", "[::1]"),
    ("url('/path').getHost()", ""),
    ("url('https://example.com:80/').getHostname()", "example.com"),
    ("url('https://127.0.0.1:80/').getHostname()", "127.0.0.1"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('/path').getHostname()", ""),
    ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""),
    ("url('/path').getPort()", ""),
    ("url('https://example.com/path').getEscapedPath()", "/path"),
    ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
    ("url('https://example.com').getEscapedPath()", ""),
    ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", {"k1": ["a"], "k2": ["b", "c"]}),
    (
        "url('https://example.com/path?key with spaces=value with spaces').getQuery()",
        {"key with spaces": ["value with spaces"]},
    ),
    ("url('https://example.com/path?').getQuery()", {}),
    ("url('https://example.com/path').getQuery()", {}),
    ("url('https://example.com/path#frag').getEscapedPath()", "/path"),
    ("url('https://example.com/a%2Fb').getEscapedPath()", "/a%2Fb"),
]

QUANTITY = [
    ("isQuantity('1.3G')", True),
    ("isQuantity('1.3Gi')", True),
    ("isQuantity('1,3G')", False),
    ("isQuantity('10000k')", True),
    ("isQuantity('200K')", False),
    ("isQuantity('Three')", False),
    # quantity.go's comment says false, but ParseQuantity reads an empty numerator as 0.
    ("isQuantity('Mi')", True),
    ("quantity('10Mo')", ERROR),
    ("quantity('10Mm')", ERROR),
    ("quantity('50k').add(quantity('20')) == quantity('50.02k')", True),
    ("quantity('50k').sub(quantity('20')) == quantity('49.98k')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).asInteger()", -49980),
    ("quantity('50.703k').asApproximateFloat()", 50703.0),
    ("quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')", True),
    ("quantity('200K')", ERROR),
    ("quantity('Three')", ERROR),
    ("quantity('bad')", ERROR),
    ("quantity('50000000G').isInteger()", True),
    ("quantity('500000G').isInteger()", True),
    ("quantity('50k').isInteger()", True),
    ("quantity('9999999999999999999999999999999999999G').asInteger()", ERROR),
    ("quantity('9999999999999999999999999999999999999G').isInteger()", False),
    ("quantity('9999999999999999999999999999999999999G').asApproximateFloat()", 1e46),
    ("quantity('50k').asInteger()", 50000),
    ("quantity('50k').sub(20000).asApproximateFloat()", 30000.0),
    ("quantity('50k').add(quantity('20k')) == quantity('70k')", True),
    ("quantity('50k').add(20) == quantity('50020')", True),
    ("quantity('50k').sub(quantity('20k')) == quantity('30k')", True),
    ("quantity('50k').sub(20000) == quantity('30k')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')", True),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    ("quantity('50M').compareTo(quantity('50Mi'))", -1),
    ("quantity('50Mi').compareTo(quantity('50M'))", 1),
    ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", True),
    ("quantity('50Mi').isGreaterThan(quantity('100Mi'))", False),
    ("quantity('50M').isLessThan(quantity('100M'))", True),
    ("quantity('100M').isLessThan(quantity('50M'))", False),
    ("quantity('1') == quantity('1000m')", True),  # Quantity.Equal compares amounts
    ("quantity('1') != quantity('1001m')", True),
    ("sign(quantity('-1'))", -1),  # quantity.go: a global overload only (the oracle)
    ("sign(quantity('0'))", 0),
    ("quantity('1.5').isInteger()", False),
]

IP = [
    ("isIP('127.0.0.1')", True),
    ("isIP('::1')", True),
    ("isIP('127.0.0.256')", False),
    ("isIP(':::1')", False),
    ("isIP('127.0.0.01')", False),  # no leading zeros
    ("isIP('::ffff:1.2.3.4')", False),  # no IPv4-mapped IPv6
    ("isIP('fe80::1%eth0')", False),  # no zone
    ("ip('127.0.0.256')", ERROR),
    ("ip.isCanonical('127.0.0.1')", True),
    ("ip.isCanonical('2001:db8::abcd')", True),
    ("ip.isCanonical('2001:DB8::ABCD')", False),
    ("ip.isCanonical('2001:db8::0:0:0:abcd')", False),
    ("ip('127.0.0.1').family()", 4),
    ("ip('::1').family()", 6),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('127.0.0.1').isUnspecified()", False),
    ("ip('::').isUnspecified()", True),
    ("ip('::1').isUnspecified()", False),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('192.168.0.1').isLoopback()", False),
    ("ip('::1').isLoopback()", True),
    ("ip('2001:db8::abcd').isLoopback()", False),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('224.0.1.1').isLinkLocalMulticast()", False),
    ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('fd00::1').isLinkLocalMulticast()", False),
    ("ip('169.254.169.254').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isLinkLocalUnicast()", False),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('fd80::1').isLinkLocalUnicast()", False),
    ("ip('192.168.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("ip('2001:db8::abcd').isGlobalUnicast()", True),
    ("ip('ff00::1').isGlobalUnicast()", False),
    ("string(ip('2001:DB8::0:0:ABCD'))", "2001:db8::abcd"),
    ("ip('::0') == ip('::')", True),
]

CIDR = [
    ("isCIDR('192.168.0.0/16')", True),
    ("isCIDR('::1/128')", True),
    ("isCIDR('192.168.0.0/33')", False),
    ("isCIDR('::1/129')", False),
    ("isCIDR('192.168.0.0/08')", False),
    ("cidr('192.168.0.0/33')", ERROR),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", False),
    ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", True),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
    ("cidr('::/0').containsIP('192.168.1.1')", False),
    ("cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))", True),
    ("cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))", False),
    ("cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')", True),
    ("cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')", False),
    ("cidr('192.168.10.0/24').containsCIDR('192.168.0.0/16')", False),
    ("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", True),
    ("cidr('192.168.0.1/24').ip().family()", 4),
    ("cidr('::1/128').ip() == ip('::1')", True),
    ("cidr('::1/128').ip().family()", 6),
    ("cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()", True),
    ("cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()", False),
    ("cidr('192.168.0.0/16').prefixLength()", 16),
    ("cidr('::1/128').prefixLength()", 128),
    ("string(cidr('192.168.0.1/24').masked())", "192.168.0.0/24"),
]

FORMAT = [
    ("format.dns1123Label().validate('my-label-name').hasValue()", False),
    ("format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()", False),
    ("format.dns1035Label().validate('my-label-name').hasValue()", False),
    ("format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()", False),
    ("format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()", False),
    ("format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()", False),
    ("format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()", False),
    ("format.uri().validate('http://example.com').hasValue()", False),
    ("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", False),
    ("format.byte().validate('aGVsbG8=').hasValue()", False),
    ("format.date().validate('2021-01-01').hasValue()", False),
    ("format.datetime().validate('2021-01-01T00:00:00Z').hasValue()", False),
    ("format.labelValue().validate('my_value').hasValue()", False),
    ("format.portName().validate('http').hasValue()", False),
    ("format.dns1123Label().validate('My_Label').hasValue()", True),
    ("format.dns1123Label().validate('a.b').value()", ["must not contain dots"]),
    ("format.dns1035Label().validate('1abc').hasValue()", True),
    ("format.uri().validate('../relative').hasValue()", True),
    ("format.uuid().validate('not-a-uuid').value()", ["does not match the UUID format"]),
    ("format.byte().validate('!!!').value()", ["invalid base64"]),
    ("format.date().validate('2021-02-30').value()", ["invalid date"]),
    ("format.datetime().validate('2021-01-01').value()", ["invalid datetime"]),
    ("format.portName().validate('-a--').value().size()", 2),
    ("format.qualifiedName().validate('/x').value()", ["prefix part must be non-empty"]),
    ("format.qualifiedName().validate('a/').value().size()", 2),  # empty, and not matching
    ("format.named('dns1123Label').hasValue()", True),
    ("format.named('nope').hasValue()", False),
    ("format.named('dns1123Label').value().validate('UPPER').hasValue()", True),
    ("format.named('labelValue').value().validate('x').hasValue()", False),
    ("format.named('nope').value()", ERROR),
]

SEMVER = [
    ("isSemver('1.0.0')", True),
    ("isSemver('hello')", False),
    ("isSemver('v1.0')", False),
    ("isSemver('v1.0', true)", True),
    ("isSemver('1.0', true)", True),
    ("isSemver('01.01.01', true)", True),
    ("isSemver('01.01.01')", False),
    ("isSemver('1.0.0-alpha.1+build.5')", True),
    ("isSemver('1.0.0-01')", False),
    ("semver('200K')", ERROR),
    ("semver('Three')", ERROR),
    ("semver('Mi')", ERROR),
    ("semver('1.2.3').major()", 1),
    ("semver('1.2.3').minor()", 2),
    ("semver('1.2.3').patch()", 3),
    ("semver('v1.0.0', true) == semver('1.0.0')", True),
    ("semver('1.0', true) == semver('1.0.0')", True),
    ("semver('01.01.01', true) == semver('1.1.1')", True),
    ("semver('1.2.3').compareTo(semver('1.2.3'))", 0),
    ("semver('1.2.3').compareTo(semver('2.0.0'))", -1),
    ("semver('1.2.3').compareTo(semver('0.1.2'))", 1),
    ("semver('1.2.3').isGreaterThan(semver('1.2.2'))", True),
    ("semver('1.2.3').isLessThan(semver('1.2.4'))", True),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
    ("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", True),
    ("semver('1.0.0-2').isLessThan(semver('1.0.0-10'))", True),
    ("semver('1.0.0+a') == semver('1.0.0+b')", True),  # Equals ignores build metadata
]

CEL_GO_EXTENSIONS = [
    ("'hello'.charAt(1)", "e"),
    ("['a', 'b'].join('-')", "a-b"),
    ("'%s and %d'.format(['x', 1])", "x and 1"),
    ("strings.quote('a\"b')", '"a\\"b"'),
    ("sets.contains([1, 2, 3], [2, 3])", True),
    ("sets.equivalent([1, 2], [2, 1, 1])", True),
    ("sets.intersects([1], [2])", False),
    ("[[1], [2, 3]].flatten()", [1, 2, 3]),
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ("[1, 1, 2].distinct()", [1, 2]),
    ("lists.range(3)", [0, 1, 2]),
    ("[1, 2, 3].slice(1, 2)", [2]),
    ("[1, 2].reverse()", [2, 1]),
    ("[1, 2].first().value()", 1),
    ("[3, 1].sortBy(x, -x)", [3, 1]),
    ("[1, 2].all(i, v, v > i)", True),
    ("[1, 2].transformList(i, v, v * 10)", [10, 20]),
    ("{'a': 1}[?'b'].orValue(2)", 2),
    ("optional.of(1).optMap(x, x + 1).value()", 2),
    ("1 < 2.5 && 3u > 2 && 2.0 >= 2", True),  # cross-type numeric comparisons
]


#: Answers the oracle gave (tests/differential/test_cel.py, issue 35), each a disagreement fixed:
#: cel-go's strings extension version 2 (ext/strings.go, ext/formatting.go ``stringFormatter`` with
#: golang.org/x/text's en_US printer), format.go's optionals, lists.go version 1's ``includes``,
#: cel-go's two-variable ``exists_one`` (ext/comprehensions.go).
ORACLE = [
    ("'%s'.format([['app', 'side']])", '["app", "side"]'),
    ("'%s'.format([{'b': 1.5, 'a': [true]}])", '{"a":[true], "b":1.500000}'),
    ("'%s'.format([{1: 1, 2u: 2}])", "{1:1, 2:2}"),
    (
        "'%s'.format([[duration('1.5s'), timestamp('2020-01-01T00:00:00.5Z'), null, 2u, -3]])",
        '[duration("1.5s"), timestamp("2020-01-01T00:00:00.5Z"), null, 2, -3]',
    ),
    ("'%s'.format([[1.0/0.0]])", '["+Inf"]'),
    ("'%s'.format([1e6])", "1e+06"),
    ("'%s'.format([123456789.0])", "1.23456789e+08"),
    ("'%s'.format([-0.0])", "-0"),
    ("'%s'.format([5.0])", "5"),
    ("'%s'.format([duration('1h2m3.5s')])", "3723.5s"),
    ("'%s'.format([type(duration('1s'))])", "google.protobuf.Duration"),
    ("'%s'.format([['\u2028é\x01\t']])", '["\\u2028é\\x01\\t"]'),
    ("'%.2f'.format([1234567.891])", "1,234,567.89"),
    ("'%f'.format([1.0/0.0])", "∞"),
    ("'%f'.format([0.0/0.0])", "NaN"),
    ("'%f'.format(['-Infinity'])", "-∞"),
    ("'%f'.format([-0.0])", "0.000000"),
    ("'%.0f'.format([-0.4])", "-0"),
    ("'%e'.format([1234567.891])", "1.234568\u00d710⁰⁶"),
    ("'%.3e'.format([-0.5])", "-5.000000\u00d710⁻⁰¹"),
    ("'%e'.format([-1.0/0.0])", "    -∞"),
    ("'%e'.format([1e-100])", "1.000000\u00d710⁻¹⁰⁰"),
    ("'%x'.format([-255])", "-ff"),
    ("'%X'.format(['hi'])", "6869"),
    ("'%b'.format([true])", "1"),
    ("'%o'.format([-8])", "-10"),
    ("'%s'.format(dyn(['a', 'b']))", "a"),
    ("'%d'.format(dyn([1.5]))", ERROR),
    ("'%s %s'.format(dyn(['a']))", ERROR),
    ("'tacocat'.indexOf('a', 30)", -1),
    ("'tacocat'.indexOf('', 30)", 7),
    ("'tacocat'.lastIndexOf('a', 30)", -1),
    ("'tacocat'.lastIndexOf('', 30)", 7),
    ("'abc'.lastIndexOf('a', 3)", -1),
    ("''.split('')", []),
    ("'a\u001fb'.trim()", "a\u001fb"),
    ("[1, 2, 3].exists_one(i, v, v > 2)", True),
    ("{'a': 1, 'b': 2}.exists_one(k, v, v > 0)", False),
    ("[1, 2, 3].includes(2)", True),
    ("'model-a'.includes('model-b')", False),
    ("[[1]].includes([1.0])", True),
    ("format.dns1123Label().validate('a') == optional.none()", True),
    ("format.dns1123Label().validate('a.b').orValue([])", ["must not contain dots"]),
    ("format.named('nope') == optional.none()", True),
    ("format.named('nope').optMap(f, f.validate('x')).hasValue()", False),
    ("format.byte().validate('').value()", ["invalid base64"]),
    ("timestamp('0001-01-01T00:00:00Z').getFullYear()", 1),
    ("int(timestamp('0001-01-01T00:00:00Z'))", -62135596800),
]


@pytest.mark.parametrize(("expression", "expected"), ORACLE)
def test_answers_the_oracle_gave(expression: str, expected: object) -> None:
    evaluates_to(expression, expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    LISTS + REGEX + URLS + QUANTITY + IP + CIDR + FORMAT + SEMVER + CEL_GO_EXTENSIONS,
)
def test_documented_examples(expression: str, expected: object) -> None:
    evaluates_to(expression, expected)


def test_runtime_errors_carry_upstream_messages() -> None:
    cases = {
        "quantity('bad')": "quantities must match the regular expression",
        "quantity('10Mm')": "unable to parse quantity's suffix",
        "quantity('9999999999999999999999999999999999999G').asInteger()": "cannot convert value to integer",
        "[].max()": "max called on empty list",
        "ip('fe80::1%eth0')": "with zone value is not allowed",
        "ip('::ffff:1.2.3.4')": "IPv4-mapped IPv6 address",
        "cidr('1.2.3.4')": "network address parse error during conversion from string",
        "url('../x')": "URL parse error during conversion from string",
        "semver('1.0.0-01')": "Numeric PreRelease version must not contain leading zeroes",
        "semver('1.0-x', true)": "short version cannot contain PreRelease/Build meta data",
    }
    for expression, message in cases.items():
        with pytest.raises(cel_environment.CelEvaluationError) as raised:
            evaluate(expression)
        assert message in raised.value.message, (expression, raised.value.message)
        assert "\n" not in raised.value.message


def test_an_error_inside_a_short_circuit_is_absorbed_as_in_cel() -> None:
    assert evaluate("isQuantity('bad') || quantity('bad').isInteger() || true") is True


def test_the_base_libraries_exist_in_the_oldest_version() -> None:
    assert evaluate("[2, 1].isSorted() || 'a1'.find('[0-9]') == '1'", "1.27") is True
    assert evaluate("url('https://example.com/').getHost()", "1.27") == "example.com"
    assert evaluate("['a', 'b'].join()", "1.27") == "ab"  # cel-go strings version 0 has join
