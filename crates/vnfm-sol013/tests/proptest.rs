//! Property tests: hostile input never panics, and Display/parse round-trip. The number of
//! cases follows `PROPTEST_CASES` (256 by default, as `scripts/test.sh` sets it).

use proptest::prelude::*;
use serde_json::json;
use vnfm_sol013::{Filter, ListParams, Marker, Op, Segment, Selector, Term, next_link};

/// Strings biased towards the filter grammar's special characters.
fn grammar_soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("(".to_owned()),
            Just(")".to_owned()),
            Just(",".to_owned()),
            Just(";".to_owned()),
            Just("'".to_owned()),
            Just("''".to_owned()),
            Just("/".to_owned()),
            Just("~".to_owned()),
            Just("@key".to_owned()),
            Just("eq".to_owned()),
            Just("in".to_owned()),
            Just("ncont".to_owned()),
            Just(" ".to_owned()),
            "[a-zé0-9]{1,4}",
            any::<char>().prop_map(String::from),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

fn name() -> impl Strategy<Value = String> {
    // Any name parse can produce: no ( ) ' ; or control characters, no surrounding spaces.
    "[a-zA-Z0-9_~/,@. é-]{1,8}"
        .prop_filter("no surrounding spaces", |s| s.trim() == s && !s.is_empty())
}

fn term() -> impl Strategy<Value = Term> {
    (
        proptest::sample::select(Op::ALL.to_vec()),
        proptest::collection::vec(name().prop_map(Segment::Name), 1..4),
        any::<bool>(),
        proptest::collection::vec("[ -~é]{0,6}", 1..4),
    )
        .prop_map(|(op, mut path, key, mut values)| {
            if key {
                path.push(Segment::Key);
            }
            if !op.takes_many() {
                values.truncate(1);
            }
            Term { op, path, values }
        })
}

proptest! {
    #[test]
    fn parse_never_panics_and_round_trips(s in grammar_soup()) {
        if let Ok(f) = Filter::parse(&s) {
            let again = Filter::parse(&f.to_string());
            prop_assert_eq!(again.as_ref(), Ok(&f), "{} -> {}", s, f);
            // Evaluation on an arbitrary document never panics either.
            let _ = f.matches(&json!({"a": [1, "x", {"b": null}], "eq": {"in": true}}));
        }
    }

    #[test]
    fn display_then_parse_is_identity(terms in proptest::collection::vec(term(), 1..5)) {
        let f = Filter::from_terms(terms).expect("valid terms");
        let text = f.to_string();
        prop_assert_eq!(Filter::parse(&text), Ok(f.clone()), "{}", text);
    }

    #[test]
    fn query_and_selector_parsing_never_panic(s in grammar_soup(), t in ".{0,60}") {
        let _ = ListParams::from_query(&s);
        let _ = ListParams::from_query(&t);
        let _ = Selector::from_params(false, Some(&s), None, true);
        let _ = Marker::decode(&t, "fp");
        let link = next_link("/p", &t, "m");
        prop_assert!(link.starts_with("</p?") && link.ends_with("nextpage_opaque_marker=m>; rel=\"next\""));
        prop_assert!(!link[1..link.len() - 13].contains(['<', '>', '"', ' ']), "{}", link);
    }

    #[test]
    fn markers_round_trip(id in ".{0,200}", fp in ".{0,50}") {
        let m = Marker::encode(&id, &fp);
        prop_assert_eq!(Marker::decode(&m, &fp), Ok(id));
    }
}
