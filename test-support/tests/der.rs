//! Unit tests of the DER writer, the calendar conversion and PEM.

use attest_test_support::{der, pem, unix_time};

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[test]
fn integers_are_minimal_and_positive() {
    assert_eq!(hex(&der::integer_unsigned(&[])), "020100");
    assert_eq!(hex(&der::integer_unsigned(&[0])), "020100");
    assert_eq!(hex(&der::integer_unsigned(&[0, 0, 0])), "020100");
    assert_eq!(hex(&der::integer_u64(0)), "020100");
    assert_eq!(hex(&der::integer_u64(0x7F)), "02017f");
    assert_eq!(hex(&der::integer_u64(0x80)), "02020080");
    assert_eq!(hex(&der::integer_u64(0xD9)), "020200d9");
    assert_eq!(hex(&der::integer_u64(0x0100)), "02020100");
    assert_eq!(hex(&der::integer_u64(0x01_0001)), "0203010001");
    assert_eq!(hex(&der::integer_unsigned(&[0, 0, 0x7F])), "02017f");
    assert_eq!(hex(&der::integer_unsigned(&[0, 0x80, 0])), "0203008000");
    assert_eq!(hex(&der::integer_unsigned(&[0xFF, 0xFF])), "020300ffff");
    assert_eq!(hex(&der::integer_u64(u64::MAX)), "020900ffffffffffffffff");
    // The raw form keeps exactly what it is given (for non-minimal encodings on purpose).
    assert_eq!(hex(&der::integer_raw(&[0x00, 0x05])), "02020005");
}

#[test]
fn lengths_use_short_and_minimal_long_forms() {
    let cases: [(usize, &str); 7] = [
        (0, "0400"),
        (127, "047f"),
        (128, "048180"),
        (255, "0481ff"),
        (256, "04820100"),
        (65_535, "0482ffff"),
        (65_536, "0483010000"),
    ];
    for (len, header) in cases {
        let encoded = der::octet_string(&vec![0xAB; len]);
        assert_eq!(hex(&encoded[..header.len() / 2]), header, "length {len}");
        assert_eq!(encoded.len(), header.len() / 2 + len);
    }
    let mut out = Vec::new();
    der::write_length(0x0123_4567, &mut out);
    assert_eq!(hex(&out), "8401234567");
}

#[test]
fn oids() {
    assert_eq!(hex(&der::oid("1.2.840.113549.1.1.10")), "06092a864886f70d01010a");
    assert_eq!(hex(&der::oid("2.16.840.1.101.3.4.2.2")), "0609608648016503040202");
    assert_eq!(hex(&der::oid("1.3.132.0.34")), "06052b81040022");
    assert_eq!(hex(&der::oid("1.3.6.1.4.1.3704.1.3.8")), "060a2b060104019c78010308");
    assert_eq!(hex(&der::oid("2.5.29.19")), "0603551d13");
    assert_eq!(hex(&der::oid("2.999.3")), "0603883703");
    assert_eq!(der::oid_from_arcs(&[1, 3, 6, 1, 4, 1, 3704, 1, 4]), der::oid("1.3.6.1.4.1.3704.1.4"));
}

#[test]
#[should_panic(expected = "invalid OID arc")]
fn bad_oid_text_panics() {
    let _ = der::oid("1.2.x");
}

#[test]
fn simple_types() {
    assert_eq!(hex(&der::boolean(true)), "0101ff");
    assert_eq!(hex(&der::boolean(false)), "010100");
    assert_eq!(hex(&der::null()), "0500");
    assert_eq!(hex(&der::bit_string(&[0xAA])), "030200aa");
    assert_eq!(hex(&der::bit_string_with_unused(1, &[0x06])), "03020106");
    assert_eq!(hex(&der::ia5_string("Turin")), "1605547572696e");
    assert_eq!(hex(&der::utf8_string("CA")), "0c024341");
    assert_eq!(hex(&der::printable_string("US")), "13025553");
    assert_eq!(hex(&der::tlv(0x42, &[1, 2])), "42020102");
}

#[test]
fn constructed_and_tagged() {
    let a = der::integer_u64(1);
    let b = der::null();
    assert_eq!(hex(&der::sequence(&[&a, &b])), "30050201010500");
    // SET OF sorts its elements.
    assert_eq!(hex(&der::set(&[&der::integer_u64(2), &der::integer_u64(1)])), "3106020101020102");
    assert_eq!(hex(&der::explicit(0, &der::integer_u64(2))), "a003020102");
    assert_eq!(hex(&der::explicit(3, &der::sequence(&[]))), "a3023000");
    assert_eq!(hex(&der::implicit(0, false, &[0xAB])), "8001ab");
    assert_eq!(hex(&der::implicit(6, false, b"x")), "860178");
    assert_eq!(hex(&der::implicit(0, true, &der::null())), "a0020500");
}

#[test]
fn times_switch_to_generalized_in_2050() {
    let t = unix_time(2049, 12, 31, 23, 59, 59);
    assert_eq!(der::time(t), der::utc_time(t));
    assert_eq!(der::utc_time(t), der::tlv(0x17, b"491231235959Z"));

    let t = unix_time(2050, 1, 1, 0, 0, 0);
    assert_eq!(der::time(t), der::tlv(0x18, b"20500101000000Z"));

    let t = unix_time(1950, 1, 1, 0, 0, 0);
    assert_eq!(der::time(t), der::tlv(0x17, b"500101000000Z"));
    let t = unix_time(1949, 12, 31, 23, 59, 59);
    assert_eq!(der::time(t), der::tlv(0x18, b"19491231235959Z"));

    // AMD's ARK-Milan notBefore.
    let t = unix_time(2020, 10, 22, 17, 23, 5);
    assert_eq!(der::time(t), der::tlv(0x17, b"201022172305Z"));
    assert_eq!(der::generalized_time(t), der::tlv(0x18, b"20201022172305Z"));
}

#[test]
#[should_panic(expected = "UTCTime only covers")]
fn utc_time_rejects_2050() {
    let _ = der::utc_time(unix_time(2050, 1, 1, 0, 0, 0));
}

#[test]
fn civil_conversion_known_points() {
    assert_eq!(unix_time(1970, 1, 1, 0, 0, 0), 0);
    assert_eq!(unix_time(2000, 3, 1, 0, 0, 0), 951_868_800);
    assert_eq!(unix_time(2020, 1, 1, 0, 0, 0), 1_577_836_800);
    assert_eq!(unix_time(2049, 1, 1, 0, 0, 0), 2_493_072_000);
    assert_eq!(unix_time(2038, 1, 19, 3, 14, 8), 1 << 31);
    assert_eq!(unix_time(1969, 12, 31, 23, 59, 59), -1);
    assert_eq!(der::civil_from_unix(-1), (1969, 12, 31, 23, 59, 59));
    assert_eq!(der::civil_from_unix(951_782_400), (2000, 2, 29, 0, 0, 0));
    assert_eq!(der::civil_from_unix(unix_time(2100, 3, 1, 0, 0, 0) - 1), (2100, 2, 28, 23, 59, 59));
    assert_eq!(der::civil_from_unix(unix_time(2024, 3, 1, 0, 0, 0) - 86_400).2, 29);
}

#[test]
fn civil_conversion_round_trips_every_day() {
    // Every day from 1900 to 2200, checked against a naive day-by-day calendar walk.
    let mut unix = unix_time(1900, 1, 1, 12, 34, 56);
    for year in 1900..2200i64 {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        for month in 1..=12u32 {
            let days = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            for day in 1..=days {
                assert_eq!(der::civil_from_unix(unix), (year, month, day, 12, 34, 56));
                assert_eq!(unix_time(year, month, day, 12, 34, 56), unix);
                unix += 86_400;
            }
        }
    }
}

#[test]
fn pem_wraps_base64_at_64_columns() {
    assert_eq!(pem("X", b""), "-----BEGIN X-----\n-----END X-----\n");
    assert_eq!(pem("X", b"f"), "-----BEGIN X-----\nZg==\n-----END X-----\n");
    assert_eq!(pem("X", b"fo"), "-----BEGIN X-----\nZm8=\n-----END X-----\n");
    assert_eq!(pem("X", b"foo"), "-----BEGIN X-----\nZm9v\n-----END X-----\n");
    let text = pem("CERTIFICATE", &[0u8; 100]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[1], "A".repeat(64));
    assert_eq!(lines[2], "A".repeat(64));
    assert_eq!(lines[3], "AAAAAA==");
}
