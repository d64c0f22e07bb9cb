use super::*;

fn owner() -> Owner {
    Owner {
        id: Some("abc123".into()),
        display_name: Some("user:abc".into()),
    }
}

fn grant_dto(id: &str, perm: &str) -> Grant {
    Grant {
        grantee: Some(Grantee {
            display_name: None,
            email_address: None,
            id: Some(id.into()),
            type_: Type::from_static(Type::CANONICAL_USER),
            uri: None,
        }),
        permission: Some(Permission::from(perm.to_owned())),
    }
}

fn asked<'a>(canned: Option<&'a str>, headers: [Option<&'a str>; 5], policy: Option<&'a AccessControlPolicy>) -> bool {
    Requested {
        canned,
        grant_headers: headers,
        policy,
    }
    .is_owner_only(&owner())
}

#[test]
fn canned_acls_headers_and_bodies_become_grants() {
    let g = |who: &str, p: &str| grant(who, p);
    assert_eq!(canned_grants("public-read", None).unwrap(), vec![g("AllUsers", "READ")]);
    assert_eq!(
        canned_grants("authenticated-read", None).unwrap(),
        vec![g("AuthenticatedUsers", "READ")]
    );
    assert!(canned_grants("private", None).unwrap().is_empty());
    // `bucket-owner-*` name the bucket owner on another user's object only.
    assert!(canned_grants("bucket-owner-full-control", None).unwrap().is_empty());
    assert_eq!(
        canned_grants("bucket-owner-read", Some("b0")).unwrap(),
        vec![g("id:b0", "READ")]
    );
    assert!(canned_grants("world-writable", None).is_err());
    let v = header_grants(&format!("uri=\"{ALL_USERS}\", id=\"abc\""), "READ").unwrap();
    assert_eq!(v, vec![g("AllUsers", "READ"), g("id:abc", "READ")]);
    assert!(header_grants("emailAddress=\"a@b.c\"", "READ").is_err());
    assert!(header_grants("uri=\"http://example.com/group\"", "READ").is_err());
    let asked = Requested {
        canned: None,
        grant_headers: [
            Some("id=\"abc123\""),
            Some(&format!("uri={ALL_USERS}")),
            None,
            None,
            None,
        ],
        policy: None,
    };
    let grants = requested_grants(&asked, None).unwrap();
    assert_eq!(grants, vec![g("id:abc123", "FULL_CONTROL"), g("AllUsers", "READ")]);
    assert_eq!(
        Acl::of(grants, "abc123", false),
        Acl {
            grants: vec![g("AllUsers", "READ")],
            owner_omitted: false
        },
        "the owner's full control, granted, is kept apart"
    );
    let body = AccessControlPolicy {
        grants: Some(vec![grant_dto("other", "WRITE_ACP")]),
        owner: Some(owner()),
    };
    let asked = Requested {
        canned: None,
        grant_headers: [None; 5],
        policy: Some(&body),
    };
    let grants = requested_grants(&asked, None).unwrap();
    assert_eq!(grants, vec![g("id:other", "WRITE_ACP")]);
    assert_eq!(
        Acl::of(grants, "abc123", false),
        Acl {
            grants: vec![g("id:other", "WRITE_ACP")],
            owner_omitted: true
        },
        "a body naming only others grants the owner nothing"
    );
    // A canned ACL grants the owner full control, whatever else it grants.
    let canned = canned_grants("public-read", None).unwrap();
    assert!(!Acl::of(canned, "abc123", true).owner_omitted);
    assert!(Acl::of(Vec::new(), "abc123", false).owner_omitted);
}

#[test]
fn grants_are_listed_groups_first_then_users_by_id() {
    let g = |who: &str, p: &str| grant(who, p);
    let listed_as = |grants: &[AclGrant], owner_omitted| -> Vec<(String, String, Option<String>)> {
        shown(&owner(), &owner(), grants, owner_omitted)
            .iter()
            .map(|gr| {
                let who = gr.grantee.as_ref().unwrap();
                (
                    who.id.clone().or(who.uri.clone()).unwrap(),
                    gr.permission.as_ref().unwrap().as_str().to_owned(),
                    who.display_name.clone(),
                )
            })
            .collect()
    };
    let owner_fc = (
        "abc123".to_owned(),
        "FULL_CONTROL".to_owned(),
        Some("user:abc".to_owned()),
    );
    let listed = |grants: &[AclGrant]| listed_as(grants, false);
    assert_eq!(listed(&[]), vec![owner_fc.clone()]);
    // Set without the owner's full control: exactly the grants (s3-tests' revoke-all: none).
    assert!(listed_as(&[], true).is_empty());
    assert_eq!(
        listed_as(&[g("AllUsers", "READ")], true),
        vec![(ALL_USERS.to_owned(), "READ".to_owned(), None)]
    );
    // public-read-write, as s3-tests reads it back: the groups, then the owner.
    assert_eq!(
        listed(&[g("AllUsers", "READ"), g("AllUsers", "WRITE")]),
        vec![
            (ALL_USERS.to_owned(), "READ".to_owned(), None),
            (ALL_USERS.to_owned(), "WRITE".to_owned(), None),
            owner_fc.clone(),
        ]
    );
    // Users by canonical ID, each user's grants in the order given; a user's display name.
    let other = "0a0b0c0d0e0f00000000000000000001";
    let listed = listed(&[g(&format!("id:{other}"), "WRITE"), g(&format!("id:{other}"), "READ")]);
    let other_name = Some("user:0a0b0c0d-0e0f-0000-0000-000000000001".to_owned());
    assert_eq!(
        listed,
        vec![
            (other.to_owned(), "WRITE".to_owned(), other_name.clone()),
            (other.to_owned(), "READ".to_owned(), other_name),
            owner_fc,
        ]
    );
}

#[test]
fn only_the_owners_full_control_is_accepted() {
    assert!(!asked(None, [None; 5], None));
    assert!(asked(Some("private"), [None; 5], None));
    assert!(asked(Some("bucket-owner-full-control"), [None; 5], None));
    assert!(!asked(Some("public-read"), [None; 5], None));
    assert!(!asked(Some("authenticated-read"), [None; 5], None));
    assert!(asked(None, [Some("id=\"abc123\""), None, None, None, None], None));
    assert!(asked(None, [Some("id=abc123"), None, None, None, None], None));
    assert!(!asked(None, [Some("id=\"someone\""), None, None, None, None], None));
    assert!(!asked(
        None,
        [Some("id=abc123, id=other"), None, None, None, None],
        None
    ));
    assert!(!asked(
        None,
        [
            None,
            Some("uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""),
            None,
            None,
            None
        ],
        None
    ));
    let mine = AccessControlPolicy {
        grants: Some(vec![grant_dto("abc123", "FULL_CONTROL")]),
        owner: Some(owner()),
    };
    assert!(asked(None, [None; 5], Some(&mine)));
    let shared = AccessControlPolicy {
        grants: Some(vec![grant_dto("abc123", "FULL_CONTROL"), grant_dto("other", "READ")]),
        owner: Some(owner()),
    };
    assert!(!asked(None, [None; 5], Some(&shared)));
    let weaker = AccessControlPolicy {
        grants: Some(vec![grant_dto("abc123", "READ")]),
        owner: Some(owner()),
    };
    assert!(!asked(None, [None; 5], Some(&weaker)));
    let none = AccessControlPolicy {
        grants: Some(vec![]),
        owner: Some(owner()),
    };
    assert!(
        !asked(None, [None; 5], Some(&none)),
        "an ACL that grants no one is not the owner's"
    );
}
