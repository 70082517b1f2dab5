import csv

from pipeline.rundir import RunWriter, SummaryRecord


def test_csv_is_spreadsheet_safe_and_flat(tmp_path):
    writer = RunWriter(tmp_path)
    prov = {"backend": "b", "model": "m", "prompt_hash": "p", "schema_version": 1, "cache_key": "k"}
    record = {
        "id": "abc",
        "title": '=HYPERLINK("http://evil")',
        "sources": [{"file": "a.txt", "position": 2}, {"file": "b.txt", "position": 1}],
        "abstract": "x",
        "stages": {
            "tldr": {"status": "ok", "output": {"tldr": "We do X, über fast."}, "provenance": prov},
            "claims": {
                "status": "ok",
                "output": {
                    "claims": [
                        {
                            "kind": "quantitative",
                            "metric": "AUROC",
                            "value": "+5.14",
                            "unit": "%",
                            "dataset": "ACM",
                            "comparison": "GGAD",
                            "statement": "s",
                            "evidence": "e",
                        },
                        {
                            "kind": "qualitative",
                            "metric": None,
                            "value": None,
                            "unit": None,
                            "dataset": None,
                            "comparison": None,
                            "statement": "It beats baselines.",
                            "evidence": "e",
                        },
                    ]
                },
                "provenance": prov,
            },
        },
    }
    writer.write_record(SummaryRecord.model_validate(record))
    writer.close()
    with open(tmp_path / "summaries.csv", encoding="utf-8-sig", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["title"].startswith("'=")
    assert row["sources"] == "a.txt#2; b.txt#1"
    assert row["tldr"] == "We do X, über fast."
    assert row["n_claims"] == "2"
    assert row["claims"] == 'AUROC +5.14 % on ACM vs GGAD: "e" | It beats baselines.'
    assert (row["paper_id"], row["id"]) == ("", "abc")
    assert (row["tldr_status"], row["tags_status"], row["claims_status"]) == ("ok", "skipped", "ok")
