//! The sentences about a pool and its servers: `instance I [of P] is
//! ejected|returns within ...`, `... is never ejected`, `... share`, and
//! `pool P served by backup`.

use super::cursor::Parser;
use super::error::ParseError;
use super::terms::server;
use crate::experiment::expect::ast::{PoolRule, Rule, Server, ValueKind, Window};

/// After `instance`: `NAME [of POOL] is ejected within ...`, `... returns
/// within ...`, `... is never ejected [WINDOW]`, `... share [WINDOW] BOUND`.
pub(crate) fn instance(p: &mut Parser) -> Result<Rule, ParseError> {
    let server = server(p)?;
    let rule = if p.eat("share") {
        let window = super::terms::window(p)?;
        let bound = super::terms::bound(p, ValueKind::Share, window == Window::Run)?;
        PoolRule::Share {
            server,
            window,
            bound,
        }
    } else if p.eat("returns") {
        health(p, server, true)?
    } else if p.eat("is") {
        if p.eat("never") {
            p.keyword("ejected")?;
            let window = super::terms::window(p)?;
            PoolRule::NeverEjected { server, window }
        } else {
            p.keyword("ejected")?;
            health(p, server, false)?
        }
    } else {
        return Err(p.error(
            "'is ejected', 'returns', 'is never ejected' or 'share'",
            &["is", "returns", "share"],
        ));
    };
    Ok(Rule::Pool(rule))
}

/// After `is ejected` / `returns`: `within DUR of ANCHOR`.
fn health(p: &mut Parser, server: Server, healthy: bool) -> Result<PoolRule, ParseError> {
    p.keyword("within")?;
    let within = p.duration()?;
    p.keyword("of")?;
    let anchor = super::terms::anchor(p)?;
    Ok(PoolRule::Health {
        server,
        healthy,
        within,
        anchor,
    })
}

/// After `pool`: `NAME served by backup [WINDOW] BOUND`.
pub(crate) fn pool(p: &mut Parser) -> Result<Rule, ParseError> {
    let pool = p.name("a pool name")?;
    p.keyword("served")?;
    p.keyword("by")?;
    p.keyword("backup")?;
    let window = super::terms::window(p)?;
    let bound = super::terms::bound(p, ValueKind::Share, window == Window::Run)?;
    Ok(Rule::Pool(PoolRule::Backup {
        pool,
        window,
        bound,
    }))
}
