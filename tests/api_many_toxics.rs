//! A proxy that collects thousands of toxics through the API, one POST at
//! a time, as a test suite that never resets would: each is listed, in the
//! order it was added, and each acts on the traffic. `firedrill server` as
//! a real process, loopback only.

mod api_support;

use api_support::{Server, echo, server};

/// How many toxics the proxy collects.
const TOXICS: usize = 3000;

/// 3,000 `http_status` toxics, each answering with its own name as the
/// body: a request is answered by the first toxic in the list, so after
/// the toxics before it are deleted, each one answers in its turn, which
/// shows that every toxic added reached the proxy's faults, in order.
#[tokio::test]
async fn three_thousand_toxics_added_one_by_one_are_each_listed_and_each_applied_in_order() {
    let s = server(&[]).await;
    let upstream = echo().await;
    let api = Server::client();
    let created = s
        .call_using(
            &api,
            "POST",
            "/proxies",
            Some(&format!(
                r#"{{"name":"many","listen":"127.0.0.1:0","upstream":"{upstream}","mode":"http"}}"#
            )),
            &[],
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let listen = created.json["listen"].as_str().unwrap().to_string();
    for i in 0..TOXICS {
        let toxic = format!(
            r#"{{"name":"t{i}","type":"http_status","attributes":{{"code":503,"body":"t{i}"}}}}"#
        );
        let added = s
            .call_using(&api, "POST", "/proxies/many/toxics", Some(&toxic), &[])
            .await;
        assert_eq!(added.status, 200, "toxic {i}: {}", added.text);
    }
    let listed = s
        .call_using(&api, "GET", "/proxies/many/toxics", None, &[])
        .await;
    let names: Vec<&str> = listed
        .json
        .as_array()
        .expect("a JSON array of toxics")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..TOXICS).map(|i| format!("t{i}")).collect();
    assert_eq!(names, expected);
    let traffic = Server::client();
    for name in &expected {
        let answer = traffic
            .get(format!("http://{listen}/stock"))
            .send()
            .await
            .expect("the proxy answers");
        assert_eq!(answer.status().as_u16(), 503);
        assert_eq!(
            &answer.text().await.unwrap(),
            name,
            "the first toxic answers"
        );
        let deleted = s
            .call_using(
                &api,
                "DELETE",
                &format!("/proxies/many/toxics/{name}"),
                None,
                &[],
            )
            .await;
        assert_eq!(deleted.status, 204, "{}", deleted.text);
    }
}
