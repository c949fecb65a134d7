use crate::error::user;
use crate::output::print_json;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum ZooCmd {
    /// List the built-in models and their parameters
    List {
        #[arg(long)]
        json: bool,
    },
    /// Build a zoo model and write it as ONNX
    Export {
        /// NAME or NAME?k=v&...
        name: String,
        /// Parameter k=v (repeatable)
        #[arg(long = "param", short = 'p')]
        params: Vec<String>,
        /// Output .onnx file
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
}

pub fn parse_params(params: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    params
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| user(format!("--param {p}: expected k=v")))
        })
        .collect()
}

pub fn run(c: ZooCmd) -> anyhow::Result<()> {
    match c {
        ZooCmd::List { json } => {
            let entries = pimkit_zoo::entries();
            if json {
                let v: Vec<_> = entries
                    .iter()
                    .map(|e| {
                        let params: Vec<_> =
                            e.params.iter().map(|p| serde_json::json!({"name": p.name, "default": p.default, "help": p.help})).collect();
                        serde_json::json!({"name": e.name, "family": e.family, "description": e.description, "params": params})
                    })
                    .collect();
                return print_json(&v);
            }
            let mut t = pimkit_report::Table::new(
                "built-in models (use as zoo:NAME?k=v&...)",
                &["name", "family", "params", "description"],
            );
            for e in &entries {
                let ps: Vec<String> = e
                    .params
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.default))
                    .collect();
                t.push(vec![
                    e.name.to_string(),
                    e.family.to_string(),
                    ps.join(" "),
                    e.description.to_string(),
                ]);
            }
            print!("{}", t.to_terminal());
            Ok(())
        }
        ZooCmd::Export {
            name,
            params,
            output,
        } => {
            let mut extra = parse_params(&params)?;
            let (name, mut p) =
                pimkit_zoo::parse_spec(name.strip_prefix("zoo:").unwrap_or(&name)).map_err(user)?;
            for (k, v) in extra.drain(..) {
                if p.iter().any(|(q, _)| *q == k) {
                    return Err(user(format!("parameter '{k}' is given twice")));
                }
                p.push((k, v));
            }
            // A spinner per stage: a large model takes seconds to build, encode and write.
            let pb = crate::output::spinner("zoo export");
            pb.set_message(format!("building {name}"));
            let g = pimkit_zoo::build(&name, &p).map_err(user);
            let saved = g.and_then(|g| {
                pb.set_message(format!("encoding and writing {}", output.display()));
                pimkit_onnx::save(&g, &output).map_err(user).map(|()| g)
            });
            pb.finish_and_clear();
            let g = saved?;
            eprintln!("wrote {} ({} nodes)", output.display(), g.nodes.len());
            Ok(())
        }
    }
}
