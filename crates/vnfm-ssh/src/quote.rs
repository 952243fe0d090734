//! Building remote command lines without shell injection.
//!
//! An SSH `exec` request carries one string that the remote user's shell parses. Everything
//! this crate sends is built by [`RemoteCommand`], which quotes every argument with
//! [`shell_quote`]: the one function to audit. Values that must not appear on a command line
//! at all (passwords) are better uploaded as files and named by path.

use std::fmt;

/// Quotes `arg` for a POSIX shell so that it is passed as exactly one word, unexpanded.
///
/// Words made only of characters no shell treats specially are left as they are; anything
/// else is put in single quotes, with each `'` written as `'\''`. The result is safe for
/// `sh`, `bash`, `dash` and `zsh`. The empty string becomes `''`.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        return arg.to_string();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A program and its arguments, rendered as one safely quoted command line.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteCommand {
    argv: Vec<String>,
    /// Arguments at these positions are not shown by `Debug`/`describe` (secrets).
    hidden: Vec<usize>,
}

impl RemoteCommand {
    /// `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        RemoteCommand {
            argv: vec![program.into()],
            hidden: Vec::new(),
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.argv.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.argv.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an argument that is never shown in logs or errors (it is still on the remote
    /// command line: prefer files for real secrets).
    pub fn secret_arg(mut self, arg: impl Into<String>) -> Self {
        self.hidden.push(self.argv.len());
        self.argv.push(arg.into());
        self
    }

    /// Runs the command with `sudo -n` (non-interactive: fails instead of asking).
    pub fn sudo(self) -> Self {
        let mut argv = vec!["sudo".to_string(), "-n".to_string()];
        let shift = argv.len();
        argv.extend(self.argv);
        RemoteCommand {
            argv,
            hidden: self.hidden.iter().map(|i| i + shift).collect(),
        }
    }

    /// The arguments.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The command line sent to the remote shell.
    pub fn to_command_line(&self) -> String {
        self.argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command line with hidden arguments shown as `***`.
    pub fn describe(&self) -> String {
        self.argv
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if self.hidden.contains(&i) {
                    "***".to_string()
                } else {
                    shell_quote(a)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Debug for RemoteCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteCommand({})", self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_plain_everything_else_is_single_quoted() {
        assert_eq!(shell_quote("kubeadm"), "kubeadm");
        assert_eq!(shell_quote("10.0.0.1/24"), "10.0.0.1/24");
        assert_eq!(
            shell_quote("--pod-cidr=10.244.0.0/16"),
            "--pod-cidr=10.244.0.0/16"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a;b|c&d`e`\n"), "'a;b|c&d`e`\n'");
    }

    #[test]
    fn sh_parses_quoted_words_back_exactly() {
        // The real check: a POSIX shell turns each quoted word back into the original.
        let words = [
            "plain",
            "",
            "two words",
            "it's",
            "'",
            "''\\'",
            "$HOME",
            "$(echo pwned)",
            "`id`",
            "a\nb",
            "*",
            "~",
            "-n",
            "ünïcödé ✓",
            "back\\slash",
            "\"double\"",
            "!bang",
        ];
        let cmd = RemoteCommand::new("printf").arg("%s\\0").args(words);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd.to_command_line())
            .output()
            .expect("sh runs");
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split('\0')
            .map(String::from)
            .collect();
        let mut expected: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        expected.push(String::new());
        assert_eq!(got, expected);
    }

    #[test]
    fn secret_arguments_are_hidden_from_descriptions_only() {
        let cmd = RemoteCommand::new("install.sh")
            .arg("--user")
            .arg("ubuntu")
            .arg("--password")
            .secret_arg("s3cr3t")
            .sudo();
        assert_eq!(
            cmd.describe(),
            "sudo -n install.sh --user ubuntu --password ***"
        );
        assert!(cmd.to_command_line().ends_with("--password s3cr3t"));
        assert!(!format!("{cmd:?}").contains("s3cr3t"));
    }
}
