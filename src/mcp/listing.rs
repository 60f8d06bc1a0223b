//! `tools/list` with the `ttlMs` its answer carried (SEP-2549): how long a client may keep the
//! list before it asks again, which `run --stale-list` shows as the length of a deploy's window.

use rmcp::model::{PaginatedRequestParams, Tool};

use super::client::{McpConnection, McpError};
use crate::error::chain;

/// A server's whole tool list, with how long its answer said the list stays fresh.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListedTools {
    pub tools: Vec<Tool>,
    /// The `ttlMs` the answer advertised: the smallest of its pages' (the list is as fresh as
    /// its stalest page); `None` when a page carried none.
    pub ttl_ms: Option<u64>,
}

/// Pages a list may take at most: a server whose cursors never end is a failure, not a loop.
const MAX_PAGES: usize = 10_000;

impl McpConnection {
    /// All tools, following every page of `tools/list` (never from a cache), with the `ttlMs`
    /// the pages advertised as they advertised it. rmcp's own merged hint counts down from the
    /// first page's arrival, so it reads 59 999 for an advertised 60 000; this one does not.
    pub async fn list_tools_with_ttl(&self) -> Result<ListedTools, McpError> {
        let (mut tools, mut ttls, mut cursor) = (Vec::new(), Vec::new(), None);
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = match self.peer().list_tools(Some(params)).await {
                Ok(page) => page,
                Err(e) => {
                    let reason = format!("tools/list failed: {}", chain(&e));
                    return Err(self.failure(reason).await);
                }
            };
            tools.extend(page.tools);
            ttls.push(page.ttl_ms);
            cursor = page.next_cursor;
            if cursor.is_none() {
                let ttl_ms = list_ttl(&ttls);
                return Ok(ListedTools { tools, ttl_ms });
            }
        }
        let reason = format!("tools/list did not end after {MAX_PAGES} pages");
        Err(self.failure(reason).await)
    }
}

/// The `ttlMs` of a list of pages: the smallest, or `None` when any page advertised none (a
/// client cannot know how long that page stays fresh, so neither is the list).
fn list_ttl(pages: &[Option<u64>]) -> Option<u64> {
    let all: Option<Vec<u64>> = pages.iter().copied().collect();
    all?.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_as_fresh_as_its_stalest_page_and_unknown_when_one_page_says_nothing() {
        assert_eq!(list_ttl(&[Some(60_000)]), Some(60_000));
        assert_eq!(list_ttl(&[Some(60_000), Some(5_000)]), Some(5_000));
        assert_eq!(list_ttl(&[Some(0)]), Some(0));
        assert_eq!(list_ttl(&[Some(60_000), None]), None);
        assert_eq!(list_ttl(&[None]), None);
    }
}
