use super::*;
use serde_json::json;

fn p(s: &str) -> Filter {
    match Filter::parse(s) {
        Ok(f) => f,
        Err(e) => panic!("{s}: {e}"),
    }
}

fn m(s: &str, doc: &Value) -> bool {
    p(s).matches(doc)
}

#[test]
fn parses_terms_paths_and_values() {
    let f = p("(eq,foo/bar,abc);(in,x,1,2,'3,4')");
    assert_eq!(f.terms().len(), 2);
    assert_eq!(f.terms()[0].op, Op::Eq);
    assert!(f.terms()[0].path_is(&["foo", "bar"]));
    assert_eq!(f.terms()[0].values, ["abc"]);
    assert_eq!(f.terms()[1].values, ["1", "2", "3,4"]);
}

#[test]
fn quoting_rules() {
    let v = |s: &str| p(s).terms()[0].values.clone();
    assert_eq!(v("(eq,a,')1')"), [")1"]);
    assert_eq!(v("(eq,a,'''a')"), ["'a"]);
    assert_eq!(v("(eq,a,'dummy ''hi'' value')"), ["dummy 'hi' value"]);
    assert_eq!(v("(eq,a,'''dummy ''hi'' value''')"), ["'dummy 'hi' value'"]);
    assert_eq!(v("(eq,a,'dummy (hi) value')"), ["dummy (hi) value"]);
    assert_eq!(v("(eq,a,dummy value)"), ["dummy value"]);
    assert_eq!(v("(eq,a,'')"), [""]);
    assert_eq!(v("(eq,a,'''')"), ["'"]);
    assert_eq!(v("(eq,a,x;y)"), ["x;y"]);
    assert_eq!(v("(eq,a,(x)"), ["(x"]);
    assert_eq!(v("(in,a,'a,b','c''d',e)"), ["a,b", "c'd", "e"]);
}

#[test]
fn invalid_values_are_refused_with_the_offset() {
    for (s, offset) in [
        ("(eq,a,singl'quote)", 11),
        ("(eq,a,three''' quotes)", 11),
        ("(eq,a,round ) bracket)", 13),
        ("(eq,a,'dummy 'hi' value')", 14),
        ("(eq,a,'dummy's value')", 13),
        ("(eq,a,'three ''' quotes')", 16),
        ("(eq,a,'unterminated)", 6),
        ("(eq,a,)", 6),
        ("(eq,a,", 6),
        ("(eq,a,value", 11),
    ] {
        match Filter::parse(s) {
            Err(Sol013Error::FilterSyntax { offset: o, .. }) => assert_eq!(o, offset, "{s}"),
            other => panic!("{s}: {other:?}"),
        }
    }
}

#[test]
fn invalid_expressions_are_refused() {
    for s in [
        "",
        "(eq,vnfProductName,value",
        "eq,vnfProductName,value)",
        "(eq,vnfProductName,value);",
        "(eq , vnfProductName ,value)",
        "(eq,,x)",
        "(eq,a//b,x)",
        "(eq,a/,x)",
        "(eq,a)",
        "(eq)",
        "()",
        "(eq,a,x)(eq,b,y)",
        "(eq,a,x) ",
        " (eq,a,x)",
        "(eq,a~2,x)",
        "(eq,a~,x)",
        "(eq,@id,x)",
        "(eq,@key/x,x)",
        "(eq,a(b,x)",
        "(eq,a\u{1}b,x)",
    ] {
        assert!(Filter::parse(s).is_err(), "{s:?} should fail");
    }
    assert!(matches!(
        Filter::parse("(le,foo,1)"),
        Err(Sol013Error::UnknownOperator { offset: 1, .. })
    ));
    assert!(matches!(
        Filter::parse("(EQ,foo,1)"),
        Err(Sol013Error::UnknownOperator { .. })
    ));
    assert!(matches!(
        Filter::parse("(eq,a,1);(gt,foo,1,2)"),
        Err(Sol013Error::TooManyValuesForOperator {
            offset: 9,
            op: "gt",
            count: 2
        })
    ));
    for op in ["eq", "neq", "gt", "gte", "lt", "lte"] {
        assert!(Filter::parse(&format!("({op},a,1,2)")).is_err(), "{op}");
    }
    for op in ["in", "nin", "cont", "ncont"] {
        assert_eq!(
            p(&format!("({op},a,1,2)")).terms()[0].values.len(),
            2,
            "{op}"
        );
    }
}

#[test]
fn attribute_name_escapes_and_key() {
    let f = p("(eq,~01/c~1~a/~be,10)");
    assert_eq!(
        f.terms()[0].path,
        [
            Segment::Name("~1".into()),
            Segment::Name("c/,".into()),
            Segment::Name("@e".into())
        ]
    );
    assert_eq!(f.to_string(), "(eq,~01/c~1~a/~be,10)");
    let k = p("(eq,vimConnectionInfo/@key,vim1)");
    assert_eq!(k.terms()[0].path[1], Segment::Key);
    assert!(k.matches(&json!({"vimConnectionInfo": {"vim1": {}, "vim2": {}}})));
    assert!(!k.matches(&json!({"vimConnectionInfo": {"vim3": {}}})));
    // A literal key named "@key" is written ~bkey.
    assert!(p("(eq,m/~bkey,1)").matches(&json!({"m": {"@key": 1}})));
}

#[test]
fn bounds_are_enforced() {
    let long = format!("(eq,a,{})", "x".repeat(MAX_FILTER_LEN));
    assert!(matches!(
        Filter::parse(&long),
        Err(Sol013Error::FilterTooLarge { .. })
    ));
    let many = vec!["(eq,a,1)"; MAX_TERMS + 1].join(";");
    assert!(matches!(
        Filter::parse(&many),
        Err(Sol013Error::FilterTooLarge {
            what: "the number of terms",
            ..
        })
    ));
    let deep = format!("(eq,{},1)", vec!["a"; MAX_PATH_DEPTH + 1].join("/"));
    assert!(matches!(
        Filter::parse(&deep),
        Err(Sol013Error::FilterTooLarge { .. })
    ));
    let vals = format!("(in,a,{})", vec!["1"; MAX_VALUES + 1].join(","));
    assert!(matches!(
        Filter::parse(&vals),
        Err(Sol013Error::FilterTooLarge { .. })
    ));
    assert_eq!(
        p(&vec!["(eq,a,1)"; MAX_TERMS].join(";")).terms().len(),
        MAX_TERMS
    );
}

#[test]
fn error_messages_do_not_echo_more_than_100_chars() {
    let hostile = format!("(eq,a,{}'x)", "y".repeat(5000));
    let msg = Filter::parse(&hostile).unwrap_err().to_string();
    assert!(msg.len() < 600, "{msg}");
    assert!(msg.contains("byte 5006"), "{msg}");
}

#[test]
fn each_operator_on_strings() {
    let d = json!({"s": "hello world"});
    assert!(m("(eq,s,hello world)", &d));
    assert!(!m("(eq,s,hello)", &d));
    assert!(m("(neq,s,hello)", &d));
    assert!(!m("(neq,s,hello world)", &d));
    assert!(m("(in,s,a,hello world)", &d));
    assert!(!m("(in,s,a,b)", &d));
    assert!(m("(nin,s,a,b)", &d));
    assert!(!m("(nin,s,a,hello world)", &d));
    assert!(m("(cont,s,xyz,wor)", &d));
    assert!(!m("(cont,s,xyz,WOR)", &d));
    assert!(m("(ncont,s,xyz,WOR)", &d));
    assert!(!m("(ncont,s,xyz,wor)", &d));
    assert!(m("(gt,s,hello)", &d));
    assert!(!m("(gt,s,hello world)", &d));
    assert!(m("(gte,s,hello world)", &d));
    assert!(m("(lt,s,i)", &d));
    assert!(!m("(lt,s,hello world)", &d));
    assert!(m("(lte,s,hello world)", &d));
}

#[test]
fn each_operator_on_numbers() {
    let d = json!({"n": 10, "f": 2.5, "big": 18446744073709551615u64});
    assert!(m("(eq,n,10)", &d));
    assert!(m("(eq,n,10.0)", &d));
    assert!(m("(eq,n,1e1)", &d));
    assert!(!m("(eq,n,9)", &d));
    assert!(m("(neq,n,9)", &d));
    assert!(m("(neq,n,abc)", &d));
    assert!(!m("(eq,n,abc)", &d));
    // Numeric, not lexicographic: "9" > "10" as strings.
    assert!(m("(gt,n,9)", &d));
    assert!(!m("(lt,n,9)", &d));
    assert!(m("(gte,n,10)", &d));
    assert!(m("(lte,n,10)", &d));
    assert!(!m("(gt,n,abc)", &d));
    assert!(m("(in,n,1,10,100)", &d));
    assert!(m("(nin,n,1,100)", &d));
    assert!(m("(gt,f,2)", &d));
    assert!(m("(lt,f,3)", &d));
    assert!(m("(eq,big,18446744073709551615)", &d));
    assert!(!m("(eq,big,18446744073709551614)", &d));
    // cont/ncont are for strings only.
    assert!(!m("(cont,n,1)", &d));
    assert!(!m("(ncont,n,1)", &d));
    for bad in ["inf", "NaN", " 10", "10 ", "0x10", "+"] {
        assert!(!m(&format!("(eq,n,{bad})"), &d), "{bad}");
    }
}

#[test]
fn booleans() {
    let d = json!({"b": false});
    assert!(m("(eq,b,false)", &d));
    assert!(!m("(eq,b,true)", &d));
    assert!(!m("(eq,b,False)", &d));
    assert!(m("(neq,b,true)", &d));
    assert!(m("(in,b,true,false)", &d));
    assert!(!m("(gt,b,true)", &d));
    assert!(!m("(cont,b,f)", &d));
}

#[test]
fn date_times_compare_as_instants() {
    let d = json!({"t": "2021-08-11T08:09:10+00:00"});
    assert!(m("(lte,t,2021-08-24T02:26:46.796695+00:00)", &d));
    assert!(!m("(gt,t,2021-08-24T02:26:46.796695+00:00)", &d));
    // Same instant, other offset: equal although the characters differ.
    assert!(m("(eq,t,2021-08-11T10:09:10+02:00)", &d));
    assert!(m("(gte,t,2021-08-11T10:09:10+02:00)", &d));
    // Character order would say "2021-08-11T09..." > "2021-08-11T08...", instants say less.
    assert!(m("(gt,t,2021-08-11T09:09:10+02:00)", &d));
}

#[test]
fn arrays_anywhere_match_if_any_element_matches() {
    let d =
        json!({"parts": [{"color": "red", "tags": ["a", "b"]}, {"color": "green", "tags": ["c"]}]});
    assert!(m("(eq,parts/color,green)", &d));
    assert!(m("(eq,parts/tags,c)", &d));
    assert!(!m("(eq,parts/tags,d)", &d));
    // Negated operators: some element differs.
    assert!(m("(neq,parts/color,green)", &d));
    assert!(!m(
        "(neq,parts/color,green)",
        &json!({"parts": [{"color": "green"}]})
    ));
    assert!(m("(nin,parts/tags,a,b)", &d));
    // Terms are evaluated independently: one part red, another with tag c.
    assert!(m("(eq,parts/color,red);(eq,parts/tags,c)", &d));
    let nested = json!({"a": [[{"b": 1}], [{"b": 2}]]});
    assert!(m("(eq,a/b,2)", &nested));
}

#[test]
fn absent_and_null_attributes_match_no_operator() {
    let d = json!({"present": "x", "nul": null, "obj": {"k": "v"}});
    for op in Op::ALL {
        let v = if op.takes_many() { "a,b" } else { "a" };
        assert!(!m(&format!("({op},missing,{v})"), &d), "{op} missing");
        assert!(!m(&format!("({op},nul,{v})"), &d), "{op} null");
        assert!(!m(&format!("({op},obj,{v})"), &d), "{op} object");
        assert!(
            !m(&format!("({op},present/deeper,{v})"), &d),
            "{op} below a string"
        );
    }
    assert!(!m("(eq,missing,x)", &json!([])));
    assert!(!m("(eq,a,x)", &json!("a")));
}

#[test]
fn display_is_canonical_and_round_trips() {
    for (input, canon) in [
        ("(eq,a,x)", "(eq,a,x)"),
        ("(eq,a,'x')", "(eq,a,x)"),
        ("(in,a,'a,b','it''s',')','')", "(in,a,'a,b','it''s',')','')"),
        ("(eq,~0~1~a~b/x@y,v)", "(eq,~0~1~a@/x@y,v)"),
        ("(eq,~bx,v)", "(eq,~bx,v)"),
        ("(eq,a,1);(neq,b/c,2)", "(eq,a,1);(neq,b/c,2)"),
    ] {
        let f = p(input);
        assert_eq!(f.to_string(), canon);
        assert_eq!(p(&f.to_string()), f);
    }
}

#[test]
fn from_terms_validates() {
    let t = Term {
        op: Op::Eq,
        path: vec![Segment::Name("a".into())],
        values: vec!["1".into(), "2".into()],
    };
    assert!(matches!(
        Filter::from_terms(vec![t.clone()]),
        Err(Sol013Error::TooManyValuesForOperator { .. })
    ));
    assert!(Filter::from_terms(vec![]).is_err());
    let ok = Term {
        values: vec!["1".into()],
        ..t
    };
    let f = Filter::from_terms(vec![ok.clone()]).expect("valid");
    assert_eq!(f.terms(), [ok]);
    let key_first = Term {
        op: Op::Eq,
        path: vec![Segment::Key, Segment::Name("a".into())],
        values: vec!["x".into()],
    };
    assert!(Filter::from_terms(vec![key_first]).is_err());
}
