"""The words the heuristic filter knows: names that carry what a response is about, and noise.

A vocabulary can only cover the APIs it was written from; the statistics in
:mod:`pflow_structure.filtering.signals` carry the filter to the others. Names are compared after
:func:`~pflow_structure.filtering.tree.normalise` (``createdAt`` → ``created_at``).
"""

from __future__ import annotations

# Names (lower case, with "-" as "_") that carry what a response is about.
BUSINESS = {
    "title": 10, "name": 9, "body": 9, "description": 8, "text": 9, "message": 9, "summary": 9, "subject": 8,
    "content": 8, "state": 8, "status": 8, "login": 7, "display_name": 8, "real_name": 7, "full_name": 7,
    "username": 7, "user_name": 7, "email": 1.5, "label": 6, "labels": 6, "tags": 5, "topic": 6, "question": 7,
    "answer": 7, "comment": 7, "comments": 5, "number": 6, "key": 2, "value": 5, "version": 6, "type": 1,
    "ref": 5, "branch": 5, "default_branch": 4, "http_method": 5, "method": 4, "base_url": 3, "fork": 3,
    "draft": 4, "merged": 4, "yanked": 3, "deprecated": 4, "user": 4, "latest": 5, "availability_zone": 4,
    "zone": 4, "reply_count": 4, "upload_time": 2, "additions": 3, "deletions": 3, "changes": 3,
    "priority": 6, "severity": 6, "phase": 6, "reason": 6, "amount": 7, "price": 7, "total": 6, "currency": 5,
    "size": 4, "score": 5, "rating": 5, "language": 4, "license": 4, "author": 6, "owner": 4, "assignee": 5,
    "channel": 5, "repo": 5, "repository": 5, "filename": 6, "path": 4, "query": 5, "snippet": 7, "excerpt": 7,
    "headline": 8, "caption": 6, "note": 6, "notes": 6, "plain_text": 9, "markdown": 7, "role": 5,
    "keywords": 5, "summary_text": 8, "conclusion": 7, "result": 5, "count": 5, "replicas": 5, "image": 4,
    "instance_type": 5, "region": 4, "namespace": 4, "stars": 5, "stargazers_count": 5, "forks_count": 4,
    "open_issues_count": 4, "downloads": 5, "requires_python": 4, "homepage": 1, "ready": 5, "paid": 5,
    "action": 6, "event": 5, "ip": 4, "quantity": 6, "restarts": 5, "customer": 5,
}  # fmt: skip
# Names that are never what a question is about.
NOISE_NAMES = frozenset(
    {
        "url", "uri", "href", "link", "links", "self", "etag", "sha", "hash", "checksum", "digest", "node_id",
        "gravatar_id", "uid", "uuid", "guid", "selflink", "resourceversion", "apiversion", "kind",
        "generation", "md5", "md5_digest", "sha256", "sha256_digest", "blake2b_256_digest",
        "color", "colour", "icon", "icon_url", "avatar", "avatar_url", "thumbnail", "image_url", "permalink",
        "slug", "arn", "cursor", "next_cursor", "page_token", "next_page_token", "nextpagetoken", "request_id",
        "requestid", "trace_id", "event_ts", "client_msg_id", "team", "team_id", "app_id", "bot_id",
        "site_admin", "default", "locked", "is_bot", "deleted", "has_more", "ok", "signature", "integrity",
        "shasum", "tarball", "fingerprint", "managedfields", "annotations", "ownerreferences", "finalizers",
        "object", "has_children", "archived", "in_trash", "is_inline", "emoji", "external", "file", "fields",
        "response_metadata", "pagination", "_links", "_meta", "_embedded", "schema", "resource_type",
    }
)  # fmt: skip
NOISE_SUFFIXES = (
    "_url", "_uri", "_href", "_link", "_links", "_id", "_ids", "_sha", "_hash", "_token", "_etag", "_path", "_arn",
)  # fmt: skip
TIME_SUFFIXES = ("_at", "_on", "_time", "_timestamp", "_date", "timestamp", "_ts")
TIME_NAMES = frozenset(
    {"created", "updated", "modified", "date", "time", "timestamp", "last_edited_time", "ts", "thread_ts"}
)
# A key ending like a business name reads like it: record_state, repository_name, group_name.
BUSINESS_SUFFIXES = ("_state", "_status", "_name", "_title", "_description", "_message", "_summary", "_type")
NOISE_SEGMENTS = frozenset(
    {"_links", "links", "_meta", "response_metadata", "pagination", "managedfields", "annotations",
     "icon", "cover", "permissions", "created_by",
     "last_edited_by", "dist", "signatures", "sub_issues_summary", "verification", "list_limits", "prefs",
     "badges", "parameters", "schemas"}
)  # fmt: skip
# Names compared without "_" too: apiVersion is normalised to api_version, listed as apiversion.
NOISE_SQUASHED = frozenset(name.replace("_", "") for name in NOISE_NAMES)
NOISE_SEGMENTS_SQUASHED = frozenset(name.replace("_", "") for name in NOISE_SEGMENTS)
