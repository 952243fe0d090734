//! `vnfm indicator`: VNF indicator values (`/vnfind/v1/indicators`): list, show.

use clap::{Args, Subcommand};
use serde_json::Value;

use super::Ctx;
use super::error::ClientError;
use super::output::{self, Table, fields, s};

/// The indicator resources of the server.
const INDICATORS: &str = "/vnfind/v1/indicators";

/// `vnfm indicator ...`.
#[derive(Debug, Subcommand)]
pub enum IndicatorCommand {
    /// List indicator values, of every instance or of one.
    List(ListArgs),
    /// Show one indicator value of an instance.
    Show {
        /// VNF instance id.
        vnf: String,
        /// Indicator id (the VnfIndicator policy's name in the VNFD).
        indicator: String,
    },
}

/// `vnfm indicator list`.
#[derive(Debug, Args, Default)]
pub struct ListArgs {
    /// Only the indicators of this VNF instance.
    #[arg(long = "vnf", value_name = "ID")]
    pub vnf: Option<String>,
    /// A SOL013 attribute filter (e.g. `(eq,id,session_load)`).
    #[arg(long, value_name = "FILTER")]
    pub filter: Option<String>,
}

/// The path `list` reads for `args`.
fn list_path(args: &ListArgs) -> String {
    match &args.vnf {
        Some(vnf) => format!("{INDICATORS}/{}", super::seg(vnf)),
        None => INDICATORS.to_owned(),
    }
}

fn indicator_fields(i: &Value) -> String {
    fields(&[
        ("id", s(i, "/id")),
        ("name", s(i, "/name")),
        ("VNF instance", s(i, "/vnfInstanceId")),
        ("value", output::compact(i, "/value")),
    ])
}

/// Runs one `vnfm indicator` command.
pub async fn run(ctx: &Ctx, cmd: IndicatorCommand) -> Result<(), ClientError> {
    match cmd {
        IndicatorCommand::List(a) => {
            let query: Vec<(&str, String)> = a
                .filter
                .clone()
                .map(|f| ("filter", f))
                .into_iter()
                .collect();
            let list = ctx.api()?.list(&list_path(&a), &query).await?;
            output::print(ctx.format, &Value::Array(list), |v| {
                let mut t = Table::new(&["VNF", "INDICATOR", "NAME", "VALUE"]);
                for i in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(i, "/vnfInstanceId"),
                        s(i, "/id"),
                        s(i, "/name"),
                        output::compact(i, "/value"),
                    ]);
                }
                t.render()
            })
        }
        IndicatorCommand::Show { vnf, indicator } => {
            let v = ctx
                .api()?
                .get(&format!(
                    "{INDICATORS}/{}/{}",
                    super::seg(&vnf),
                    super::seg(&indicator)
                ))
                .await?;
            output::print(ctx.format, &v, indicator_fields)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vnf_option_selects_the_instance_collection() {
        assert_eq!(list_path(&ListArgs::default()), "/vnfind/v1/indicators");
        let one = ListArgs {
            vnf: Some("a b".into()),
            ..ListArgs::default()
        };
        assert_eq!(list_path(&one), "/vnfind/v1/indicators/a%20b");
    }
}
