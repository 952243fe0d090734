//! One rule of the oslo.policy language: its parser and its evaluation.
//!
//! The language, as oslo.policy reads it: checks `kind:match` joined by `and`, `or` and
//! `not` (keywords in any case; `not` binds tightest, then `and`, then `or`) and grouped with
//! parentheses; `@` always passes, `!` never does, an empty rule always passes.
//!
//! | check | passes when |
//! |---|---|
//! | `role:NAME` | the caller has role `NAME` (case-insensitive) |
//! | `rule:NAME` | the rule `NAME` of the same file passes (an undefined one fails) |
//! | `KIND:VALUE` | the caller's attribute `KIND` (a dotted path into the credentials; any member of a list) equals `VALUE` |
//! | `'LITERAL':VALUE` / `True:VALUE` | the literal (a quoted string, `True`, `False`, `None`, a number) equals `VALUE` |
//!
//! `VALUE` may hold `%(name)s` substitutions from the target (the resource the request is
//! about); a check whose substitution names an attribute the target lacks fails, as in
//! oslo.policy. External `http:`/`https:` checks are refused when the file is read.

use serde_json::{Map, Value};

/// A parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// `@` (or an empty rule): always passes.
    Always,
    /// `!`: never passes.
    Never,
    /// `not RULE`.
    Not(Box<Rule>),
    /// `A and B and ...`.
    And(Vec<Rule>),
    /// `A or B or ...`.
    Or(Vec<Rule>),
    /// `role:NAME`.
    Role(String),
    /// `rule:NAME`.
    Ref(String),
    /// `KIND:VALUE`: a credential attribute (or a literal) compared with a value.
    Generic {
        /// The left side: a dotted credential path or a literal.
        kind: String,
        /// The right side, with `%(name)s` substitutions.
        value: String,
    },
}

/// What [`Rule::check`] needs besides the rule: the other rules, the target and the caller.
pub struct Context<'a> {
    /// Looks up the rules that `rule:NAME` names.
    pub rules: &'a dyn Fn(&str) -> Option<&'a Rule>,
    /// The attributes of the resource the request is about.
    pub target: &'a Map<String, Value>,
    /// The caller's credentials (`roles`, `project_id`, `is_admin`, `area`, ...).
    pub creds: &'a Map<String, Value>,
}

/// How deep `rule:` references may nest (a cycle fails closed there).
const MAX_DEPTH: usize = 32;

impl Rule {
    /// Parses a rule's text; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let tokens = tokenize(text)?;
        if tokens.is_empty() {
            return Ok(Rule::Always);
        }
        let mut parser = Parser { tokens, pos: 0 };
        let rule = parser.or()?;
        match parser.tokens.get(parser.pos) {
            None => Ok(rule),
            Some(t) => Err(format!("unexpected {} after a complete rule", t.describe())),
        }
    }

    /// Whether the rule passes for `ctx`.
    pub fn check(&self, ctx: &Context<'_>) -> bool {
        self.check_at(ctx, 0)
    }

    fn check_at(&self, ctx: &Context<'_>, depth: usize) -> bool {
        match self {
            Rule::Always => true,
            Rule::Never => false,
            Rule::Not(r) => !r.check_at(ctx, depth),
            Rule::And(rs) => rs.iter().all(|r| r.check_at(ctx, depth)),
            Rule::Or(rs) => rs.iter().any(|r| r.check_at(ctx, depth)),
            Rule::Ref(name) => {
                depth < MAX_DEPTH && (ctx.rules)(name).is_some_and(|r| r.check_at(ctx, depth + 1))
            }
            Rule::Role(name) => {
                let Some(role) = substitute(name, ctx.target) else {
                    return false;
                };
                let role = role.to_lowercase();
                ctx.creds
                    .get("roles")
                    .and_then(Value::as_array)
                    .is_some_and(|roles| {
                        roles
                            .iter()
                            .any(|r| r.as_str().is_some_and(|r| r.to_lowercase() == role))
                    })
            }
            Rule::Generic { kind, value } => {
                let Some(wanted) = substitute(value, ctx.target) else {
                    return false;
                };
                if let Some(literal) = literal(kind) {
                    return literal == wanted;
                }
                let path: Vec<&str> = kind.split('.').collect();
                find(&Value::Object(ctx.creds.clone()), &path, &wanted)
            }
        }
    }

    /// The names of the rules this one refers to (`rule:NAME`), for checking a file.
    pub fn references(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_refs(&mut out);
        out
    }

    fn collect_refs<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Rule::Ref(n) => out.push(n),
            Rule::Not(r) => r.collect_refs(out),
            Rule::And(rs) | Rule::Or(rs) => rs.iter().for_each(|r| r.collect_refs(out)),
            _ => {}
        }
    }
}

/// Python's `str()` of a JSON value, as oslo.policy compares them.
pub(crate) fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// `text` with its `%(name)s` replaced by the target's attributes (`%%` is `%`); `None` when
/// the target lacks one (oslo.policy's `KeyError`: the check fails).
fn substitute(text: &str, target: &Map<String, Value>) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('%') {
            out.push('%');
            rest = r;
        } else if let Some(r) = after.strip_prefix('(') {
            let end = r.find(')')?;
            let name = &r[..end];
            let r = &r[end + 1..];
            let r = r.strip_prefix('s').unwrap_or(r);
            out.push_str(&python_str(target.get(name)?));
            rest = r;
        } else {
            out.push('%');
            rest = after;
        }
    }
    out.push_str(rest);
    Some(out)
}

/// The value of `kind` read as a Python literal (`ast.literal_eval`), when it is one.
fn literal(kind: &str) -> Option<String> {
    let quoted = |q: char| {
        kind.strip_prefix(q)
            .and_then(|k| k.strip_suffix(q))
            .filter(|_| kind.len() >= 2)
    };
    if let Some(s) = quoted('\'').or_else(|| quoted('"')) {
        return Some(s.to_owned());
    }
    match kind {
        "True" | "False" | "None" => return Some(kind.to_owned()),
        _ => {}
    }
    if let Ok(i) = kind.parse::<i64>() {
        return Some(i.to_string());
    }
    kind.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && kind.contains('.'))
        .map(|f| format!("{f:?}"))
}

/// oslo.policy's `_find_in_dict`: walks `path` in `value`; a list matches when one of its
/// members does.
fn find(value: &Value, path: &[&str], wanted: &str) -> bool {
    let Some((key, rest)) = path.split_first() else {
        return python_str(value) == wanted;
    };
    let Some(next) = value.as_object().and_then(|o| o.get(*key)) else {
        return false;
    };
    match next {
        Value::Array(items) => items.iter().any(|v| find(v, rest, wanted)),
        other => find(other, rest, wanted),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    And,
    Or,
    Not,
    Check(Rule),
    /// A quoted string standing alone, which no rule accepts.
    Text(String),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
            Token::And => "`and`".into(),
            Token::Or => "`or`".into(),
            Token::Not => "`not`".into(),
            Token::Check(r) => format!("check {r:?}"),
            Token::Text(t) => format!("string `{t}`"),
        }
    }
}

/// oslo.policy's tokenizer: whitespace-separated words, parentheses peeled off both ends.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let clean = word.trim_start_matches('(');
        out.extend(std::iter::repeat_n(Token::Open, word.len() - clean.len()));
        if clean.is_empty() {
            continue;
        }
        let inner = clean.trim_end_matches(')');
        let trailing = clean.len() - inner.len();
        if !inner.is_empty() {
            out.push(match inner.to_lowercase().as_str() {
                "and" => Token::And,
                "or" => Token::Or,
                "not" => Token::Not,
                _ if inner.len() >= 2
                    && ((inner.starts_with('"') && inner.ends_with('"'))
                        || (inner.starts_with('\'') && inner.ends_with('\''))) =>
                {
                    Token::Text(inner[1..inner.len() - 1].to_owned())
                }
                _ => Token::Check(check(inner)?),
            });
        }
        out.extend(std::iter::repeat_n(Token::Close, trailing));
    }
    Ok(out)
}

/// One check word.
fn check(word: &str) -> Result<Rule, String> {
    match word {
        "@" => return Ok(Rule::Always),
        "!" => return Ok(Rule::Never),
        _ => {}
    }
    let Some((kind, value)) = word.split_once(':') else {
        return Err(format!(
            "`{word}` is not a check: write `kind:value` (`role:admin`, `rule:name`, `project_id:%(project_id)s`), `@` or `!`"
        ));
    };
    match kind {
        "rule" => Ok(Rule::Ref(value.to_owned())),
        "role" => Ok(Rule::Role(value.to_owned())),
        "http" | "https" => Err(format!(
            "`{word}`: external (http/https) checks are not supported"
        )),
        "" => Err(format!("`{word}`: the check has no kind before `:`")),
        _ => Ok(Rule::Generic {
            kind: kind.to_owned(),
            value: value.to_owned(),
        }),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn or(&mut self) -> Result<Rule, String> {
        let mut items = vec![self.and()?];
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Rule::Or(items)
        })
    }

    fn and(&mut self) -> Result<Rule, String> {
        let mut items = vec![self.not()?];
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            items.push(self.not()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Rule::And(items)
        })
    }

    fn not(&mut self) -> Result<Rule, String> {
        if self.peek() == Some(&Token::Not) {
            self.pos += 1;
            return Ok(Rule::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Rule, String> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        match token {
            Some(Token::Check(r)) => Ok(r),
            Some(Token::Open) => {
                let inner = self.or()?;
                match self.tokens.get(self.pos) {
                    Some(Token::Close) => {
                        self.pos += 1;
                        Ok(inner)
                    }
                    Some(t) => Err(format!("expected `)`, found {}", t.describe())),
                    None => Err("a `(` is never closed".into()),
                }
            }
            Some(t) => Err(format!("expected a check, found {}", t.describe())),
            None => Err("the rule ends where a check is expected".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(rule: &str, target: Value, creds: Value) -> bool {
        let rule = Rule::parse(rule).unwrap();
        let admin = Rule::parse("role:admin").unwrap();
        let lookup = |name: &str| (name == "is_admin_rule").then_some(&admin);
        let ctx = Context {
            rules: &lookup,
            target: target.as_object().unwrap(),
            creds: creds.as_object().unwrap(),
        };
        rule.check(&ctx)
    }

    #[test]
    fn precedence_is_not_then_and_then_or() {
        assert_eq!(
            Rule::parse("role:a and role:b or role:c").unwrap(),
            Rule::Or(vec![
                Rule::And(vec![Rule::Role("a".into()), Rule::Role("b".into())]),
                Rule::Role("c".into())
            ])
        );
        assert_eq!(
            Rule::parse("not role:a and role:b").unwrap(),
            Rule::And(vec![
                Rule::Not(Box::new(Rule::Role("a".into()))),
                Rule::Role("b".into())
            ])
        );
        assert_eq!(
            Rule::parse("role:a AND (role:b Or role:c)").unwrap(),
            Rule::And(vec![
                Rule::Role("a".into()),
                Rule::Or(vec![Rule::Role("b".into()), Rule::Role("c".into())])
            ])
        );
        assert_eq!(Rule::parse("").unwrap(), Rule::Always);
        assert_eq!(Rule::parse("((@))").unwrap(), Rule::Always);
        assert_eq!(Rule::parse("!").unwrap(), Rule::Never);
    }

    #[test]
    fn malformed_rules_say_what_is_wrong() {
        for (text, says) in [
            ("role:a and", "ends where a check"),
            ("(role:a", "never closed"),
            ("role:a)", "unexpected `)`"),
            ("admin", "is not a check"),
            ("role:a role:b", "unexpected check"),
            ("http://example.com/check", "not supported"),
            ("'x'", "found string"),
            (":x", "no kind"),
        ] {
            let e = Rule::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn each_check_form_evaluates_as_oslo_policy_does() {
        let creds = json!({"roles": ["Admin", "reader"], "project_id": "p1", "is_admin": true,
                           "area": ["*", "tokyo@japan"], "user": {"enabled": true}});
        let t = json!({"project_id": "p1", "area": "tokyo@japan", "other": "p2"});
        assert!(eval("role:admin", t.clone(), creds.clone()));
        assert!(!eval("role:member", t.clone(), creds.clone()));
        assert!(eval("rule:is_admin_rule", t.clone(), creds.clone()));
        assert!(!eval("rule:undefined", t.clone(), creds.clone()));
        assert!(eval("project_id:%(project_id)s", t.clone(), creds.clone()));
        assert!(!eval("project_id:%(other)s", t.clone(), creds.clone()));
        // A substitution the target lacks fails the check, even under `not`'s operand.
        assert!(!eval("project_id:%(missing)s", t.clone(), creds.clone()));
        assert!(eval("not project_id:%(missing)s", t.clone(), creds.clone()));
        assert!(eval("is_admin:True", t.clone(), creds.clone()));
        assert!(eval("area:%(area)s", t.clone(), creds.clone()));
        assert!(eval("area:*", t.clone(), creds.clone()));
        assert!(eval("user.enabled:True", t.clone(), creds.clone()));
        assert!(eval("'p1':%(project_id)s", t.clone(), creds.clone()));
        assert!(!eval("'p2':%(project_id)s", t.clone(), creds.clone()));
        assert!(eval("True:True", t.clone(), creds.clone()));
        assert!(eval("@", t.clone(), creds.clone()));
        assert!(!eval("!", t.clone(), creds.clone()));
        assert!(eval("! or @", t.clone(), creds.clone()));
        assert!(!eval("! and @", t.clone(), creds.clone()));
        assert!(eval("role:%(r)s", json!({"r": "READER"}), creds.clone()));
        assert!(eval(
            "project_id:100%%",
            json!({}),
            json!({"project_id": "100%"})
        ));
    }
}
