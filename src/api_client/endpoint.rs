//! Where a call goes below an API's root, built from parts and never from text: each path
//! segment is percent-encoded on its own by `url` (so a project path `group/sub/project` stays
//! one segment, `group%2Fsub%2Fproject`, as GitLab wants it) and the query is form-encoded
//! pair by pair. The fixed parts of a path are `&'static str` literals: a name that comes
//! from a config, a branch or an answer can only be a [`Endpoint::segment`].

use std::fmt;
use url::Url;

/// A path and query below an API's root (`projects/:id/issues?state=opened`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    segments: Vec<String>,
    query: Vec<(&'static str, String)>,
}

impl Endpoint {
    /// The API's root itself (a GraphQL endpoint).
    pub fn root() -> Endpoint {
        Endpoint::default()
    }

    /// The fixed path `fixed` (`"merge_trains/merge_requests"`: its `/` separate segments).
    pub fn new(fixed: &'static str) -> Endpoint {
        Endpoint::root().fixed(fixed)
    }

    /// The path continued by the fixed segments of `fixed`.
    pub fn fixed(mut self, fixed: &'static str) -> Endpoint {
        self.segments.extend(
            fixed
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        self
    }

    /// The path continued by `value` as one segment, whatever it holds (`/`, spaces, `?`).
    /// Only `.` and `..` name no segment (`url` leaves them out, as a server would resolve
    /// them): no project, branch or label GitLab allows is either.
    pub fn segment(mut self, value: impl fmt::Display) -> Endpoint {
        self.segments.push(value.to_string());
        self
    }

    /// The query continued by `key=value`, `value` form-encoded.
    pub fn query(mut self, key: &'static str, value: impl fmt::Display) -> Endpoint {
        self.query.push((key, value.to_string()));
        self
    }

    /// The endpoint's URL below `base`; `Err` when `base` cannot have a path below it.
    pub fn url_below(&self, base: &Url) -> Result<Url, String> {
        let mut url = base.clone();
        if !self.segments.is_empty() {
            url.path_segments_mut()
                .map_err(|()| format!("{base} cannot have a path below it"))?
                .pop_if_empty()
                .extend(&self.segments);
        }
        if !self.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(self.query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        Ok(url)
    }

    /// The endpoint below `base` as text: the URL when `base` is one, else the two as written
    /// (the call then refuses it, naming what is wrong).
    pub fn below(&self, base: &str) -> String {
        match Url::parse(base).map(|b| self.url_below(&b)) {
            Ok(Ok(url)) => url.to_string(),
            _ => match self.to_string().as_str() {
                "" => base.to_string(),
                rest => format!("{}/{rest}", base.trim_end_matches('/')),
            },
        }
    }
}

/// The endpoint as it is sent, without the root: `projects/group%2Fproject/issues?state=opened`.
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Below a root of `/`, the text after that `/` is the endpoint's own.
        let url = Url::parse("http://api.invalid/")
            .ok()
            .and_then(|root| self.url_below(&root).ok());
        let path = url.as_ref().map_or("", |u| &u[url::Position::BeforePath..]);
        f.write_str(path.strip_prefix('/').unwrap_or(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gitlab() -> Url {
        Url::parse("https://gitlab.example/api/v4").expect("a URL")
    }

    #[test]
    fn a_project_path_is_one_segment() {
        let at = Endpoint::new("projects")
            .segment("group/sub/project")
            .fixed("issues")
            .segment(12);
        assert_eq!(
            at.url_below(&gitlab()).expect("a URL").as_str(),
            "https://gitlab.example/api/v4/projects/group%2Fsub%2Fproject/issues/12"
        );
        assert_eq!(at.to_string(), "projects/group%2Fsub%2Fproject/issues/12");
    }

    #[test]
    fn a_segment_holding_a_query_or_a_fragment_stays_in_the_path() {
        let at = Endpoint::new("repository/branches").segment("7-fix/x y?z#w%");
        assert_eq!(
            at.to_string(),
            "repository/branches/7-fix%2Fx%20y%3Fz%23w%25"
        );
    }

    #[test]
    fn query_values_are_form_encoded_in_their_order() {
        let at = Endpoint::new("projects/7/pipelines/3/jobs")
            .query("scope[]", "failed")
            .query("labels", "needs review & more")
            .query("per_page", 100);
        assert_eq!(
            at.to_string(),
            "projects/7/pipelines/3/jobs?scope%5B%5D=failed&labels=needs+review+%26+more&per_page=100"
        );
    }

    #[test]
    fn the_root_is_the_base_itself_and_a_base_keeps_its_own_path() {
        let linear = Url::parse("https://api.linear.app/graphql").expect("a URL");
        assert_eq!(
            Endpoint::root().url_below(&linear).expect("a URL").as_str(),
            "https://api.linear.app/graphql"
        );
        assert_eq!(
            Endpoint::new("api/v4").below("https://git.example/gitlab/"),
            "https://git.example/gitlab/api/v4"
        );
        assert_eq!(
            Endpoint::new("api/v4").below("https://gitlab.com"),
            "https://gitlab.com/api/v4"
        );
        assert_eq!(Endpoint::new("api/v4").below("gitlab"), "gitlab/api/v4");
        let mail = Url::parse("mailto:x@example.com").expect("a URL");
        assert!(Endpoint::new("x").url_below(&mail).is_err());
    }
}
