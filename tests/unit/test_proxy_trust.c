/*
 * Unit tests for server/http/proxy_trust.h, as a specification of which address
 * the access log names as the client.
 *
 * CIDRs: an address alone is a host; a prefix may be 0 up to the family's
 * bits; an IPv4-mapped IPv6 address is IPv4, its prefix counted in IPv6 bits;
 * anything else (spaces, empty parts, signs, zones, short forms) is refused.
 * Matching: prefixes end on any bit, families never mix (but mapped is IPv4).
 *
 * The client: a peer that is not a trusted proxy is the client, whatever its
 * X-Forwarded-For says. From a trusted peer, X-Forwarded-For is read from the
 * right and the first address that is not a trusted proxy is the client; all
 * trusted, the left-most one. Elements are separated by commas, with spaces
 * and tabs around them ignored, as are empty elements (RFC 9110 5.6.1); an
 * element may carry a port (192.0.2.1:8080, [2001:db8::1]:443), which is
 * dropped; an element that is not an address ends the walk, and the last
 * address believed stands. Several header lines are one list, the lines
 * joined by ", " in order.
 *
 * Who faces the client (for the per-client limits): an untrusted peer is
 * faced directly; a trusted peer naming an untrusted client faces that
 * client; a client that is itself trusted is a proxy's own request. An
 * address's key is its 16 bytes, IPv4 as IPv4-mapped IPv6, however written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "http/proxy_trust.h"

#define PEER "10.0.0.1"
#define JOINED_MAX 512

/* The trusted proxies of most tests: 10.0.0.0/8 and ::1. */
static struct cidr trusted[2];
static const size_t trusted_count = 2;

static int setup(void **state)
{
	(void)state;
	if (cidr_parse("10.0.0.0/8", &trusted[0]) < 0 || cidr_parse("::1", &trusted[1]) < 0)
		return -1;
	return 0;
}

static struct cidr parsed(const char *text)
{
	struct cidr cidr;
	memset(&cidr, 0xaa, sizeof(cidr));
	assert_int_equal(cidr_parse(text, &cidr), 0);
	return cidr;
}

static void assert_refused(const char *text)
{
	struct cidr cidr;
	if (cidr_parse(text, &cidr) != -1)
		fail_msg("cidr_parse accepted \"%s\"", text);
}

static bool in(const char *cidr_text, const char *address)
{
	struct cidr cidr = parsed(cidr_text);
	return cidr_contains(&cidr, address);
}

/* The client proxy_trust_client names, from peer with one X-Forwarded-For line. */
static const char *client_of(const char *peer, const char *forwarded_for, char *out)
{
	return proxy_trust_client(trusted, trusted_count, peer, forwarded_for, out,
				  PROXY_TRUST_ADDRESS_MAX);
}

/* The same for a trusted peer, as a string to compare. */
static const char *client(const char *forwarded_for)
{
	static char out[PROXY_TRUST_ADDRESS_MAX];
	return client_of(PEER, forwarded_for, out);
}

static const char *client_of_lines(const char *const *lines, size_t count)
{
	static char out[PROXY_TRUST_ADDRESS_MAX];
	return proxy_trust_client_lines(trusted, trusted_count, PEER, lines, count, out,
					sizeof(out));
}

/* CIDR parsing */

static void test_cidr_an_ipv4_address_alone_is_a_host(void **state)
{
	(void)state;
	struct cidr cidr = parsed("192.168.1.7");
	assert_int_equal(cidr.family, AF_INET);
	assert_int_equal(cidr.prefix_bits, 32);
	assert_memory_equal(cidr.bytes, ((uint8_t[]){192, 168, 1, 7}), 4);
}

static void test_cidr_an_ipv4_prefix_is_read(void **state)
{
	(void)state;
	struct cidr cidr = parsed("10.0.0.0/8");
	assert_int_equal(cidr.family, AF_INET);
	assert_int_equal(cidr.prefix_bits, 8);
	assert_memory_equal(cidr.bytes, ((uint8_t[]){10, 0, 0, 0}), 4);
}

static void test_cidr_an_ipv6_address_alone_is_a_host(void **state)
{
	(void)state;
	struct cidr cidr = parsed("::1");
	assert_int_equal(cidr.family, AF_INET6);
	assert_int_equal(cidr.prefix_bits, 128);
	assert_memory_equal(cidr.bytes, ((uint8_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}),
			    16);
}

static void test_cidr_an_ipv6_prefix_is_read(void **state)
{
	(void)state;
	struct cidr cidr = parsed("fd00::/8");
	assert_int_equal(cidr.family, AF_INET6);
	assert_int_equal(cidr.prefix_bits, 8);
	assert_int_equal(cidr.bytes[0], 0xfd);
}

static void test_cidr_prefix_may_be_zero_or_the_whole_address(void **state)
{
	(void)state;
	assert_int_equal(parsed("0.0.0.0/0").prefix_bits, 0);
	assert_int_equal(parsed("10.0.0.1/32").prefix_bits, 32);
	assert_int_equal(parsed("::/0").prefix_bits, 0);
	assert_int_equal(parsed("2001:db8::1/128").prefix_bits, 128);
}

static void test_cidr_prefix_longer_than_the_address_is_refused(void **state)
{
	(void)state;
	assert_refused("10.0.0.0/33");
	assert_refused("2001:db8::/129");
	assert_refused("10.0.0.0/99999999999999999999999");
}

static void test_cidr_prefix_that_is_not_a_plain_number_is_refused(void **state)
{
	(void)state;
	assert_refused("10.0.0.0/");
	assert_refused("10.0.0.0/+8");
	assert_refused("10.0.0.0/-8");
	assert_refused("10.0.0.0/ 8");
	assert_refused("10.0.0.0/8 ");
	assert_refused("10.0.0.0/8x");
	assert_refused("10.0.0.0/8/8");
	assert_refused("10.0.0.0/0x8");
}

static void test_cidr_prefix_with_leading_zeros_is_its_number(void **state)
{
	(void)state;
	assert_int_equal(parsed("10.0.0.0/08").prefix_bits, 8);
}

static void test_cidr_host_bits_beyond_the_prefix_are_allowed_and_ignored(void **state)
{
	(void)state;
	assert_true(in("10.1.2.3/8", "10.200.0.1"));
	assert_false(in("10.1.2.3/8", "11.1.2.3"));
}

static void test_cidr_without_an_address_is_refused(void **state)
{
	(void)state;
	assert_refused("");
	assert_refused("/8");
	assert_refused("localhost");
	assert_refused("10.0.0.0.0/8");
}

static void test_cidr_abbreviated_or_padded_ipv4_is_refused(void **state)
{
	(void)state;
	assert_refused("10.0.0");	/* inet_aton would read 10.0.0.0 */
	assert_refused("010.0.0.1"); /* or octal */
	assert_refused("0x0a.0.0.1");
	assert_refused("10.0.0.256");
}

static void test_cidr_with_spaces_around_the_address_is_refused(void **state)
{
	(void)state;
	assert_refused(" 10.0.0.0/8");
	assert_refused("10.0.0.0 /8");
	assert_refused("10.0.0.1 ");
}

static void test_cidr_ipv6_with_a_zone_is_refused(void **state)
{
	(void)state;
	assert_refused("fe80::1%eth0");
	assert_refused("fe80::1%eth0/64");
}

static void test_cidr_longer_than_any_address_is_refused(void **state)
{
	(void)state;
	char text[PROXY_TRUST_ADDRESS_MAX + 8];
	memset(text, '0', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	memcpy(text, "::", 2); /* "::000...": a valid IPv6 address could not be this long */
	assert_refused(text);
}

static void test_cidr_ipv4_mapped_address_is_an_ipv4_host(void **state)
{
	(void)state;
	struct cidr cidr = parsed("::ffff:127.0.0.1");
	assert_int_equal(cidr.family, AF_INET);
	assert_int_equal(cidr.prefix_bits, 32);
	assert_memory_equal(cidr.bytes, ((uint8_t[]){127, 0, 0, 1}), 4);
}

static void test_cidr_ipv4_mapped_prefix_counts_ipv6_bits(void **state)
{
	(void)state;
	struct cidr cidr = parsed("::ffff:10.0.0.0/104");
	assert_int_equal(cidr.family, AF_INET);
	assert_int_equal(cidr.prefix_bits, 8);
	assert_int_equal(parsed("::ffff:0.0.0.0/96").prefix_bits, 0);
}

static void test_cidr_ipv4_mapped_prefix_reaching_beyond_the_mapped_block_is_refused(void **state)
{
	(void)state;
	assert_refused("::ffff:10.0.0.0/95");
	assert_refused("::ffff:10.0.0.0/8");
	assert_refused("::ffff:10.0.0.0/129");
}

/* CIDR matching */

static void test_contains_ipv4_addresses_at_both_ends_of_the_prefix(void **state)
{
	(void)state;
	assert_true(in("192.168.1.0/24", "192.168.1.0"));
	assert_true(in("192.168.1.0/24", "192.168.1.255"));
	assert_false(in("192.168.1.0/24", "192.168.0.255"));
	assert_false(in("192.168.1.0/24", "192.168.2.0"));
}

static void test_contains_with_a_prefix_inside_an_octet(void **state)
{
	(void)state;
	assert_true(in("10.16.0.0/12", "10.16.0.0"));
	assert_true(in("10.16.0.0/12", "10.31.255.255"));
	assert_false(in("10.16.0.0/12", "10.15.255.255"));
	assert_false(in("10.16.0.0/12", "10.32.0.0"));
	assert_true(in("2001:db8::/31", "2001:db9::1"));
	assert_false(in("2001:db8::/31", "2001:dba::1"));
}

static void test_contains_a_host_only_itself(void **state)
{
	(void)state;
	assert_true(in("10.0.0.1", "10.0.0.1"));
	assert_false(in("10.0.0.1", "10.0.0.2"));
	assert_true(in("2001:db8::1", "2001:db8:0:0::1"));
	assert_false(in("2001:db8::1", "2001:db8::2"));
}

static void test_contains_with_prefix_zero_every_address_of_its_family_only(void **state)
{
	(void)state;
	assert_true(in("0.0.0.0/0", "203.0.113.9"));
	assert_true(in("0.0.0.0/0", "255.255.255.255"));
	assert_false(in("0.0.0.0/0", "2001:db8::1"));
	assert_true(in("::/0", "2001:db8::1"));
	assert_false(in("::/0", "203.0.113.9"));
}

static void test_contains_ipv6_at_both_ends_of_a_64_bit_prefix(void **state)
{
	(void)state;
	assert_true(in("2001:db8:1:2::/64", "2001:db8:1:2::"));
	assert_true(in("2001:db8:1:2::/64", "2001:db8:1:2:ffff:ffff:ffff:ffff"));
	assert_false(in("2001:db8:1:2::/64", "2001:db8:1:3::"));
	assert_false(in("2001:db8:1:2::/64", "2001:db8:1:1:ffff:ffff:ffff:ffff"));
}

static void test_contains_ipv4_mapped_address_as_ipv4(void **state)
{
	(void)state;
	assert_true(in("10.0.0.0/8", "::ffff:10.1.2.3"));
	assert_false(in("10.0.0.0/8", "::ffff:11.1.2.3"));
	assert_true(in("::ffff:10.0.0.0/104", "10.9.9.9"));
	/* Not the IPv4-compatible form, which is IPv6. */
	assert_false(in("10.0.0.0/8", "::10.1.2.3"));
}

static void test_contains_nothing_that_is_not_a_bare_address(void **state)
{
	(void)state;
	assert_false(in("0.0.0.0/0", ""));
	assert_false(in("0.0.0.0/0", "10.0.0.1:80"));
	assert_false(in("0.0.0.0/0", "10.0.0.0/8"));
	assert_false(in("0.0.0.0/0", " 10.0.0.1"));
	assert_false(in("::/0", "[::1]"));
	assert_false(in("0.0.0.0/0", "unknown"));
}

/* The client: whom to believe */

static void test_untrusted_peer_is_the_client_whatever_it_forwards(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = "198.51.100.9";
	assert_ptr_equal(client_of(peer, "203.0.113.7", out), peer);
	assert_ptr_equal(client_of(peer, "10.0.0.5", out), peer);
	const char *const lines[] = {"203.0.113.7", "203.0.113.8"};
	assert_ptr_equal(proxy_trust_client_lines(trusted, trusted_count, peer, lines, 2, out,
						  sizeof(out)),
			 peer);
}

static void test_trusted_peer_without_the_header_is_the_client(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	assert_ptr_equal(client_of(peer, NULL, out), peer);
	assert_ptr_equal(proxy_trust_client_lines(trusted, trusted_count, peer, NULL, 0, out,
						  sizeof(out)),
			 peer);
}

static void test_trusted_peer_with_an_empty_header_is_the_client(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	assert_ptr_equal(client_of(peer, "", out), peer);
	assert_ptr_equal(client_of(peer, "  ", out), peer);
}

static void test_no_peer_gives_no_client(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	assert_null(client_of(NULL, "203.0.113.7", out));
}

static void test_no_trusted_proxies_believes_no_one(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	assert_ptr_equal(proxy_trust_client(NULL, 0, peer, "203.0.113.7", out, sizeof(out)), peer);
}

static void test_one_forwarded_address_from_a_trusted_peer_is_the_client(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *chosen = client_of(PEER, "203.0.113.7", out);
	assert_ptr_equal(chosen, out);
	assert_string_equal(chosen, "203.0.113.7");
}

static void test_right_most_address_is_the_client_when_it_is_untrusted(void **state)
{
	(void)state;
	/* The left one is whatever the client claimed; the right one its proxy saw. */
	assert_string_equal(client("203.0.113.9, 198.51.100.23"), "198.51.100.23");
}

static void test_trusted_addresses_on_the_right_are_passed_over(void **state)
{
	(void)state;
	assert_string_equal(client("198.51.100.7, 10.0.0.5, 10.0.0.6"), "198.51.100.7");
	assert_string_equal(client("198.51.100.7, ::1"), "198.51.100.7");
}

static void test_the_right_most_untrusted_address_wins_over_those_left_of_it(void **state)
{
	(void)state;
	assert_string_equal(client("192.0.2.1, 192.0.2.2, 10.0.0.5"), "192.0.2.2");
}

static void test_an_all_trusted_chain_names_its_left_most_address(void **state)
{
	(void)state;
	assert_string_equal(client("10.0.0.7, 10.0.0.6, 10.0.0.5"), "10.0.0.7");
	assert_string_equal(client("10.9.9.9"), "10.9.9.9");
}

static void test_trusted_ipv6_peer_and_ipv6_client(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	assert_string_equal(client_of("::1", "2001:db8::7", out), "2001:db8::7");
	assert_string_equal(client("2001:db8::7, ::1"), "2001:db8::7");
}

static void test_ipv4_mapped_peer_is_trusted_as_its_ipv4_address(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = "::ffff:10.0.0.1";
	assert_string_equal(client_of(peer, "203.0.113.7", out), "203.0.113.7");
	/* And a mapped trusted address in the list is passed over. */
	assert_string_equal(client("203.0.113.7, ::ffff:10.0.0.5"), "203.0.113.7");
}

/* The client: the list's syntax */

static void test_spaces_and_tabs_around_elements_are_ignored(void **state)
{
	(void)state;
	assert_string_equal(client("203.0.113.7,10.0.0.5"), "203.0.113.7");
	assert_string_equal(client("  203.0.113.7 ,\t10.0.0.5\t "), "203.0.113.7");
	assert_string_equal(client("\t198.51.100.23  "), "198.51.100.23");
}

static void test_empty_elements_are_ignored(void **state)
{
	(void)state;
	assert_string_equal(client("203.0.113.7,,10.0.0.5"), "203.0.113.7");
	assert_string_equal(client("203.0.113.7, , 10.0.0.5"), "203.0.113.7");
	assert_string_equal(client(", 203.0.113.7"), "203.0.113.7");
	assert_string_equal(client("203.0.113.7 ,"), "203.0.113.7");
	assert_string_equal(client("203.0.113.7,\t,"), "203.0.113.7");
}

static void test_a_list_of_empty_elements_is_no_list(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	assert_ptr_equal(client_of(peer, ",", out), peer);
	assert_ptr_equal(client_of(peer, " , ,\t,", out), peer);
}

static void test_a_right_most_element_that_is_not_an_address_leaves_the_peer(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	assert_ptr_equal(client_of(peer, "203.0.113.7, unknown", out), peer);
	assert_ptr_equal(client_of(peer, "203.0.113.7, 203.0.113", out), peer);
	assert_ptr_equal(client_of(peer, "203.0.113.7, 203.0.113.8 203.0.113.9", out), peer);
}

static void test_the_walk_stops_at_an_element_that_is_not_an_address(void **state)
{
	(void)state;
	/* The last address believed stands: the trusted hop right of the garbage. */
	assert_string_equal(client("203.0.113.7, garbage, 10.0.0.5"), "10.0.0.5");
	assert_string_equal(client("203.0.113.7, _hidden, 10.0.0.6, 10.0.0.5"), "10.0.0.6");
}

static void test_a_cidr_is_not_an_address(void **state)
{
	(void)state;
	assert_string_equal(client("203.0.113.7, 10.0.0.0/8, 10.0.0.5"), "10.0.0.5");
}

static void test_an_element_longer_than_any_address_is_not_an_address(void **state)
{
	(void)state;
	char list[JOINED_MAX];
	char long_element[PROXY_TRUST_ADDRESS_MAX + 1];
	memset(long_element, '1', sizeof(long_element) - 1);
	long_element[sizeof(long_element) - 1] = '\0';
	snprintf(list, sizeof(list), "203.0.113.7, %s, 10.0.0.5", long_element);
	assert_string_equal(client(list), "10.0.0.5");
}

static void test_the_longest_ipv6_text_is_an_address_and_fits(void **state)
{
	(void)state;
	const char *longest = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255";
	assert_string_equal(client(longest), longest);
}

static void test_an_ipv4_port_is_dropped(void **state)
{
	(void)state;
	assert_string_equal(client("203.0.113.7:8080"), "203.0.113.7");
	assert_string_equal(client("203.0.113.7:0, 10.0.0.5:65535"), "203.0.113.7");
}

static void test_a_bracketed_ipv6_address_with_or_without_a_port_is_the_address(void **state)
{
	(void)state;
	assert_string_equal(client("[2001:db8::7]:443"), "2001:db8::7");
	assert_string_equal(client("[2001:db8::7]"), "2001:db8::7");
	assert_string_equal(client("203.0.113.7, [::1]:80"), "203.0.113.7");
}

static void test_a_malformed_port_or_bracket_is_not_an_address(void **state)
{
	(void)state;
	char out[PROXY_TRUST_ADDRESS_MAX];
	const char *peer = PEER;
	static const char *const malformed[] = {
		"203.0.113.7:",	      "203.0.113.7:http",  "203.0.113.7:65536", "203.0.113.7:123456",
		"203.0.113.7:-1",     ":8080",		   "[2001:db8::7",	"[2001:db8::7]:",
		"[2001:db8::7]x",     "[2001:db8::7]:a",   "[203.0.113.7]",	"[]",
		"2001:db8::7:8080:1:2:3:4", "[2001:db8::7] :80",
	};
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		const char *chosen = client_of(peer, malformed[i], out);
		if (chosen != peer)
			fail_msg("\"%s\" was taken for the address %s", malformed[i], chosen);
	}
}

/* The client: several header lines are one list */

static void test_several_lines_are_read_as_one_list_right_most_line_last(void **state)
{
	(void)state;
	const char *const lines[] = {"203.0.113.9", "198.51.100.23"};
	assert_string_equal(client_of_lines(lines, 2), "198.51.100.23");
}

static void test_the_walk_goes_on_into_earlier_lines(void **state)
{
	(void)state;
	const char *const lines[] = {"198.51.100.7", "10.0.0.5, 10.0.0.6", "10.0.0.4"};
	assert_string_equal(client_of_lines(lines, 3), "198.51.100.7");
}

static void test_an_all_trusted_chain_over_lines_names_the_first_lines_left_most(void **state)
{
	(void)state;
	const char *const lines[] = {"10.0.0.9, 10.0.0.8", "10.0.0.7"};
	assert_string_equal(client_of_lines(lines, 2), "10.0.0.9");
}

static void test_elements_never_run_across_lines(void **state)
{
	(void)state;
	/* Joined with ", ", this is "198.51.100, .7": no address at all. */
	const char *const lines[] = {"198.51.100", ".7"};
	assert_string_equal(client_of_lines(lines, 2), PEER);
	const char *const split_port[] = {"198.51.100.7", ":8080"};
	assert_string_equal(client_of_lines(split_port, 2), PEER);
}

static void test_empty_and_absent_lines_are_empty_elements(void **state)
{
	(void)state;
	const char *const lines[] = {"", "203.0.113.7", NULL, " ", "10.0.0.5", ""};
	assert_string_equal(client_of_lines(lines, 6), "203.0.113.7");
	const char *const only_empty[] = {"", " ,", NULL};
	assert_string_equal(client_of_lines(only_empty, 3), PEER);
}

static void test_a_later_line_that_is_not_an_address_stops_the_walk_there(void **state)
{
	(void)state;
	const char *const lines[] = {"203.0.113.7", "garbage, 10.0.0.5"};
	assert_string_equal(client_of_lines(lines, 2), "10.0.0.5");
	const char *const last_bad[] = {"203.0.113.7", "garbage"};
	assert_string_equal(client_of_lines(last_bad, 2), PEER);
}

static void test_only_count_lines_are_read(void **state)
{
	(void)state;
	const char *const lines[] = {"203.0.113.7", "198.51.100.23"};
	assert_string_equal(client_of_lines(lines, 1), "203.0.113.7");
	assert_string_equal(client_of_lines(lines, 0), PEER);
}

/* Joins lines with ", " as RFC 9110 does. */
static void join_lines(const char *const *lines, size_t count, char *out, size_t out_size)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		int written = snprintf(out + used, out_size - used, "%s%s", i ? ", " : "", lines[i]);
		assert_true(written >= 0 && (size_t)written < out_size - used);
		used += (size_t)written;
	}
}

static void test_lines_always_answer_as_their_joined_list_does(void **state)
{
	(void)state;
	static const char *const pieces[] = {
		"203.0.113.7", "10.0.0.5",	 "", " , ",	       "garbage", "::1",
		"[2001:db8::1]:443", "10.0.0.6, 198.51.100.2", "10.1.1.1:80", "198.51.100",
	};
	enum { PIECES = sizeof(pieces) / sizeof(pieces[0]), LINES = 3 };
	/* Every sequence of LINES pieces. */
	size_t total = 1;
	for (int i = 0; i < LINES; i++)
		total *= PIECES;
	for (size_t n = 0; n < total; n++) {
		const char *lines[LINES];
		size_t rest = n;
		for (int i = 0; i < LINES; i++) {
			lines[i] = pieces[rest % PIECES];
			rest /= PIECES;
		}
		char joined[JOINED_MAX], from_lines[PROXY_TRUST_ADDRESS_MAX];
		char from_joined[PROXY_TRUST_ADDRESS_MAX];
		join_lines(lines, LINES, joined, sizeof(joined));
		const char *a = proxy_trust_client_lines(trusted, trusted_count, PEER, lines, LINES,
							 from_lines, sizeof(from_lines));
		const char *b = client_of(PEER, joined, from_joined);
		if (strcmp(a, b) != 0)
			fail_msg("lines of \"%s\" gave %s, the joined list %s", joined, a, b);
	}
}

/* --- Who faces the client (the per-client limits' place) --- */

static void test_place_an_untrusted_peer_is_the_client_faced_directly(void **state)
{
	(void)state;
	assert_int_equal(proxy_trust_place(trusted, trusted_count, "192.0.2.1", "192.0.2.1"),
			 PROXY_TRUST_DIRECT);
	assert_int_equal(proxy_trust_place(NULL, 0, "10.0.0.1", "10.0.0.1"), PROXY_TRUST_DIRECT);
}

static void test_place_a_trusted_peer_naming_an_untrusted_client_faces_it(void **state)
{
	(void)state;
	assert_int_equal(proxy_trust_place(trusted, trusted_count, PEER, "198.51.100.7"),
			 PROXY_TRUST_BEHIND_PROXY);
	assert_int_equal(proxy_trust_place(trusted, trusted_count, "::1", "2001:db8::7"),
			 PROXY_TRUST_BEHIND_PROXY);
}

static void test_place_a_trusted_client_is_a_proxys_own_request(void **state)
{
	(void)state;
	/* No X-Forwarded-For (the client is the peer), or one naming trusted hops only. */
	assert_int_equal(proxy_trust_place(trusted, trusted_count, PEER, PEER),
			 PROXY_TRUST_PROXY_ITSELF);
	assert_int_equal(proxy_trust_place(trusted, trusted_count, PEER, "10.9.9.9"),
			 PROXY_TRUST_PROXY_ITSELF);
	assert_int_equal(proxy_trust_place(trusted, trusted_count, PEER, "::ffff:10.1.2.3"),
			 PROXY_TRUST_PROXY_ITSELF);
}

static void assert_key_at(const char *text, unsigned ipv6_prefix_bits, const uint8_t expected[16])
{
	uint8_t key[16];
	memset(key, 0xaa, sizeof(key));
	assert_int_equal(proxy_trust_client_key(text, ipv6_prefix_bits, key), 0);
	assert_memory_equal(key, expected, 16);
}

static void assert_key(const char *text, const uint8_t expected[16])
{
	assert_key_at(text, 64, expected);
}

static void test_key_of_ipv4_is_its_ipv4_mapped_ipv6_address(void **state)
{
	(void)state;
	static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
	assert_key("192.0.2.7", mapped);
	assert_key("::ffff:192.0.2.7", mapped);
	assert_key("::FFFF:c000:0207", mapped);
	/* Whatever the IPv6 prefix: an IPv4 client is its address, mapped or not. */
	assert_key_at("192.0.2.7", 32, mapped);
	assert_key_at("::ffff:192.0.2.7", 32, mapped);
	assert_key_at("::ffff:192.0.2.7", 128, mapped);
}

static void test_key_of_ipv6_is_its_first_64_bits_by_default(void **state)
{
	(void)state;
	static const uint8_t prefix[16] = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x02};
	assert_key("2001:db8:1:2::1", prefix);
	assert_key("2001:0DB8:1:2:0:0:0:1", prefix);
	assert_key("2001:db8:1:2:ffff:ffff:ffff:ffff", prefix);
	assert_key("2001:db8:1:2:a::b", prefix);
}

static void test_keys_of_other_ipv6_prefixes_differ(void **state)
{
	(void)state;
	uint8_t a[16], b[16];
	assert_int_equal(proxy_trust_client_key("2001:db8:1:2::1", 64, a), 0);
	assert_int_equal(proxy_trust_client_key("2001:db8:1:3::1", 64, b), 0);
	assert_memory_not_equal(a, b, 16);
	/* ::ffff:0:0/96 is IPv4: no IPv6 prefix is ever an IPv4 client's key. */
	assert_int_equal(proxy_trust_client_key("::fffe:0:0:0:0", 64, a), 0);
	assert_int_equal(proxy_trust_client_key("0.0.0.0", 64, b), 0);
	assert_memory_not_equal(a, b, 16);
}

static void test_key_of_ipv6_at_other_prefixes(void **state)
{
	(void)state;
	static const uint8_t whole[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t at_48[16] = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01};
	static const uint8_t at_56[16] = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0xab};
	static const uint8_t at_60[16] = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0xab, 0xc0};
	assert_key_at("2001:db8:1:2::1", 128, whole);
	assert_key_at("2001:db8:1:ffff::1", 48, at_48);
	assert_key_at("2001:db8:1:abcd::1", 56, at_56);
	assert_key_at("2001:db8:1:abcd::1", 60, at_60);
	assert_key_at("2001:db8:1:abcf::1", 60, at_60);
}

static void test_key_of_what_is_not_an_address_is_refused(void **state)
{
	(void)state;
	uint8_t key[16];
	const char *refused[] = {"", "-", "unknown", "192.0.2.7:80", "[2001:db8::1]", "10.0.0.0/8",
				 " 192.0.2.7"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (proxy_trust_client_key(refused[i], 64, key) != -1)
			fail_msg("\"%s\" gave a key", refused[i]);
	}
	assert_int_equal(proxy_trust_client_key(NULL, 64, key), -1);
}

#define TEST(name) cmocka_unit_test_setup(name, setup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_place_an_untrusted_peer_is_the_client_faced_directly),
		TEST(test_place_a_trusted_peer_naming_an_untrusted_client_faces_it),
		TEST(test_place_a_trusted_client_is_a_proxys_own_request),
		TEST(test_key_of_ipv4_is_its_ipv4_mapped_ipv6_address),
		TEST(test_key_of_ipv6_is_its_first_64_bits_by_default),
		TEST(test_keys_of_other_ipv6_prefixes_differ),
		TEST(test_key_of_ipv6_at_other_prefixes),
		TEST(test_key_of_what_is_not_an_address_is_refused),
		TEST(test_cidr_an_ipv4_address_alone_is_a_host),
		TEST(test_cidr_an_ipv4_prefix_is_read),
		TEST(test_cidr_an_ipv6_address_alone_is_a_host),
		TEST(test_cidr_an_ipv6_prefix_is_read),
		TEST(test_cidr_prefix_may_be_zero_or_the_whole_address),
		TEST(test_cidr_prefix_longer_than_the_address_is_refused),
		TEST(test_cidr_prefix_that_is_not_a_plain_number_is_refused),
		TEST(test_cidr_prefix_with_leading_zeros_is_its_number),
		TEST(test_cidr_host_bits_beyond_the_prefix_are_allowed_and_ignored),
		TEST(test_cidr_without_an_address_is_refused),
		TEST(test_cidr_abbreviated_or_padded_ipv4_is_refused),
		TEST(test_cidr_with_spaces_around_the_address_is_refused),
		TEST(test_cidr_ipv6_with_a_zone_is_refused),
		TEST(test_cidr_longer_than_any_address_is_refused),
		TEST(test_cidr_ipv4_mapped_address_is_an_ipv4_host),
		TEST(test_cidr_ipv4_mapped_prefix_counts_ipv6_bits),
		TEST(test_cidr_ipv4_mapped_prefix_reaching_beyond_the_mapped_block_is_refused),
		TEST(test_contains_ipv4_addresses_at_both_ends_of_the_prefix),
		TEST(test_contains_with_a_prefix_inside_an_octet),
		TEST(test_contains_a_host_only_itself),
		TEST(test_contains_with_prefix_zero_every_address_of_its_family_only),
		TEST(test_contains_ipv6_at_both_ends_of_a_64_bit_prefix),
		TEST(test_contains_ipv4_mapped_address_as_ipv4),
		TEST(test_contains_nothing_that_is_not_a_bare_address),
		TEST(test_untrusted_peer_is_the_client_whatever_it_forwards),
		TEST(test_trusted_peer_without_the_header_is_the_client),
		TEST(test_trusted_peer_with_an_empty_header_is_the_client),
		TEST(test_no_peer_gives_no_client),
		TEST(test_no_trusted_proxies_believes_no_one),
		TEST(test_one_forwarded_address_from_a_trusted_peer_is_the_client),
		TEST(test_right_most_address_is_the_client_when_it_is_untrusted),
		TEST(test_trusted_addresses_on_the_right_are_passed_over),
		TEST(test_the_right_most_untrusted_address_wins_over_those_left_of_it),
		TEST(test_an_all_trusted_chain_names_its_left_most_address),
		TEST(test_trusted_ipv6_peer_and_ipv6_client),
		TEST(test_ipv4_mapped_peer_is_trusted_as_its_ipv4_address),
		TEST(test_spaces_and_tabs_around_elements_are_ignored),
		TEST(test_empty_elements_are_ignored),
		TEST(test_a_list_of_empty_elements_is_no_list),
		TEST(test_a_right_most_element_that_is_not_an_address_leaves_the_peer),
		TEST(test_the_walk_stops_at_an_element_that_is_not_an_address),
		TEST(test_a_cidr_is_not_an_address),
		TEST(test_an_element_longer_than_any_address_is_not_an_address),
		TEST(test_the_longest_ipv6_text_is_an_address_and_fits),
		TEST(test_an_ipv4_port_is_dropped),
		TEST(test_a_bracketed_ipv6_address_with_or_without_a_port_is_the_address),
		TEST(test_a_malformed_port_or_bracket_is_not_an_address),
		TEST(test_several_lines_are_read_as_one_list_right_most_line_last),
		TEST(test_the_walk_goes_on_into_earlier_lines),
		TEST(test_an_all_trusted_chain_over_lines_names_the_first_lines_left_most),
		TEST(test_elements_never_run_across_lines),
		TEST(test_empty_and_absent_lines_are_empty_elements),
		TEST(test_a_later_line_that_is_not_an_address_stops_the_walk_there),
		TEST(test_only_count_lines_are_read),
		TEST(test_lines_always_answer_as_their_joined_list_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
