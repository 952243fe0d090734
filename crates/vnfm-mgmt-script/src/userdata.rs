//! User data classes (OpenStack Tacker's `lcm-operation-user-data` /
//! `lcm-operation-user-data-class`), run for the OpenStack infrastructure driver through the
//! [`UserDataScripts`] port.
//!
//! Tacker's OpenStack driver runs a small Python program that imports the class from the
//! package and calls its static method for the operation. This module does the same with a
//! program of its own ([`ENTRY`], passed with `python -c`): in a fresh copy of the package
//! (the temporary directory hook scripts get, the working directory), in the process group,
//! environment and limits of hook scripts, it reads one pickled dict from stdin:
//!
//! | key | value |
//! |---|---|
//! | `request` | the LCM request body, Tacker's `req` |
//! | `vnf_instance` | the instance, its `vimConnectionInfo` entries replaced by the resolved connections (with `accessInfo`), Tacker's `inst` |
//! | `grant_request`, `grant_response` | the occurrence's `GrantRequest` and `Grant` (dicts), `None` when there is none |
//! | `tmp_csar_dir` | the temporary directory holding the package files |
//! | `module`, `class`, `method` | what to call: the file as a module path (`./UserData/userdata.py` is `UserData.userdata`), the class, the method (`instantiate`, `scale_rollback`, ...) |
//!
//! appends `tmp_csar_dir` to `sys.path` (as Tacker does), imports the module, calls
//! `<class>.<method>(req, inst, grant_req, grant, tmp_csar_dir)` and writes what it returned,
//! which must be a dict, pickled to stdout. What the class prints goes to stderr, so it cannot
//! spoil the answer. Failures end with one line saying what failed, after the traceback:
//! exit status 1 when the method raised, 2 when the module cannot be imported (for a missing
//! `tacker` module, with a hint about `--python`), 3 when the module has no such class or the
//! class no such method (permanent: running it again cannot help), 4 when the answer is not a
//! dict or cannot be pickled.

use std::collections::BTreeSet;
use std::ffi::OsString;

use async_trait::async_trait;
use serde_json::{Map, Value as Json};
use vnfm_driver_api::{DriverError, UserDataCall, UserDataScripts};

use crate::coordinate::package_path;
use crate::{ScriptError, ScriptMgmtDriver, materialize_package, pickle, with_vims};

/// The Python program that imports the class and calls the method (see the
/// [module documentation](self)).
pub(crate) const ENTRY: &str = r#"
import importlib, os, pickle, sys, traceback

def fail(status, message):
    sys.stderr.write('vnfm user data: ' + message + '\n')
    sys.stderr.flush()
    os._exit(status)

def main():
    args = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    if sys.path and sys.path[0] == '':
        del sys.path[0]
    tmp_csar_dir = args['tmp_csar_dir']
    sys.path.append(tmp_csar_dir)
    module_name, class_name, method_name = args['module'], args['class'], args['method']
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        traceback.print_exc()
        hint = ''
        if isinstance(e, ImportError) and (getattr(e, 'name', None) or '').split('.')[0] == 'tacker':
            hint = (' (the class imports OpenStack Tacker\'s modules: give the server a'
                    ' --python interpreter that can import tacker)')
        fail(2, 'importing module `%s` from the package failed: %s: %s%s'
             % (module_name, type(e).__name__, e, hint))
    klass = getattr(module, class_name, None)
    if klass is None:
        fail(3, 'module `%s` has no class `%s`' % (module_name, class_name))
    method = getattr(klass, method_name, None)
    if method is None:
        fail(3, 'class `%s` of module `%s` has no method `%s`'
             % (class_name, module_name, method_name))
    try:
        fields = method(args['request'], args['vnf_instance'], args['grant_request'],
                        args['grant_response'], tmp_csar_dir)
    except Exception as e:
        traceback.print_exc()
        fail(1, '%s.%s raised %s: %s' % (class_name, method_name, type(e).__name__, e))
    if not isinstance(fields, dict):
        fail(4, '%s.%s returned %s, not a dict' % (class_name, method_name, type(fields).__name__))
    try:
        data = pickle.dumps(fields)
    except Exception as e:
        fail(4, 'what %s.%s returned cannot be pickled: %s' % (class_name, method_name, e))
    out.write(data)
    out.flush()
    os._exit(0)

main()
"#;

/// The exit status [`ENTRY`] ends with when the module lacks the class or the class the
/// method.
const NO_SUCH_NAME: i32 = 3;

/// `UserData/userdata.py` as the module Python imports (`UserData.userdata`).
fn module_name(file: &str) -> Result<String, ScriptError> {
    let stem = file.strip_suffix(".py").ok_or_else(|| {
        ScriptError::NotRunnable(format!(
            "the user data file `{file}` is not a Python file (`.py`)"
        ))
    })?;
    let parts: Vec<&str> = stem.split('/').collect();
    let identifier = |p: &&str| {
        !p.is_empty()
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    if !parts.iter().all(identifier) {
        return Err(ScriptError::NotRunnable(format!(
            "the user data file `{file}` cannot be imported as a Python module: every directory and the file name must be Python identifiers"
        )));
    }
    Ok(parts.join("."))
}

impl ScriptMgmtDriver {
    /// Runs `call` in a fresh copy of its package and answers the dict the method returned.
    pub(crate) async fn run_user_data(&self, call: &UserDataCall) -> Result<Json, ScriptError> {
        let file = package_path(&call.file)?;
        let module = module_name(&file)?;
        let python = self.interpreter()?;
        let dir = materialize_package(
            &call.vnfd,
            &*call.artifacts,
            BTreeSet::from([file.as_str()]),
            self.config.work_dir.as_deref(),
        )?;
        let mut input = Map::new();
        input.insert("request".into(), call.request.clone());
        input.insert("vnf_instance".into(), with_vims(&call.instance, &call.vims));
        input.insert("grant_request".into(), call.grant_request.clone());
        input.insert("grant_response".into(), call.grant.clone());
        input.insert(
            "tmp_csar_dir".into(),
            dir.path().to_string_lossy().into_owned().into(),
        );
        input.insert("module".into(), module.into());
        input.insert("class".into(), call.class.clone().into());
        input.insert("method".into(), call.method.clone().into());
        let result = match pickle::encode(&Json::Object(input)) {
            Ok(stdin) => {
                let args = vec![OsString::from("-c"), OsString::from(ENTRY)];
                self.exec_args(
                    dir.path(),
                    &python,
                    args,
                    &call.describe(),
                    stdin,
                    &call.control,
                )
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = dir.close() {
            tracing::warn!(class = %call.class, error = %e, "removing the temporary package directory of a user data class failed");
        }
        let finished = result?;
        if !finished.status.success() {
            let error = self.exit_error(
                format!("{}.{}", call.class, call.method),
                &finished,
                &call.vims,
            );
            return Err(match (finished.status.code(), error) {
                (Some(NO_SUCH_NAME), ScriptError::Exit { stderr_tail, .. }) => {
                    ScriptError::UserDataClass(
                        stderr_tail
                            .lines()
                            .last()
                            .unwrap_or_default()
                            .trim_start_matches("vnfm user data: ")
                            .to_string(),
                    )
                }
                (_, e) => e,
            });
        }
        if finished.stdout_overflow {
            return Err(ScriptError::OutputTooLarge {
                limit: self.config.stdout_limit,
            });
        }
        match pickle::decode(&finished.stdout)? {
            Some(fields @ Json::Object(_)) => Ok(fields),
            Some(_) => Err(ScriptError::OutputShape("is not a dict".into())),
            None => Err(ScriptError::OutputShape(
                "is empty: the class returned nothing".into(),
            )),
        }
    }
}

#[async_trait]
impl UserDataScripts for ScriptMgmtDriver {
    /// Runs the class's method as Tacker's OpenStack driver does (see docs/mgmt-scripts.md).
    async fn run(&self, call: &UserDataCall) -> Result<Json, DriverError> {
        let what = call.describe();
        call.control.check(&what)?;
        self.run_user_data(call)
            .await
            .map_err(|e| e.into_driver_error(&what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_becomes_the_module_tacker_imports() {
        assert_eq!(
            module_name("UserData/userdata.py").unwrap(),
            "UserData.userdata"
        );
        assert_eq!(module_name("lcm_user_data.py").unwrap(), "lcm_user_data");
        for bad in [
            "UserData/userdata.sh",
            "User-Data/u.py",
            "UserData/1st.py",
            ".py",
        ] {
            assert!(
                matches!(module_name(bad), Err(ScriptError::NotRunnable(_))),
                "{bad}"
            );
        }
    }
}
