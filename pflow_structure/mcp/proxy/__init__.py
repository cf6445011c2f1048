"""``pflow-structure proxy``: any MCP server behind structure-first answers.

One file a part, in the order a message meets them:

- :mod:`.startup`: the stdio server started before anything else loads (no event loop, no SDK);
- :mod:`.run`: the proxy as a process (signals, the client's stdio, the calls in flight at exit);
- :mod:`.relay`: :class:`~.relay.Proxy`, the JSON-RPC relay between the client and the server;
  :mod:`.calls`, its ``tools/call``;
- :mod:`.listing` and :mod:`.toollist`: the server's tools as the proxy knows and lists them
  (``--tools full|compact|light``, ``describe_tools``, ``search_tools``);
- :mod:`.gateway`: many servers in the place of one (``--config CLIENT_CONFIG``);
- :mod:`.downstream`: the session with the server behind, over :mod:`.stdio` (a command: its output cut
  into lines by :mod:`.lines`, each read as a message by :mod:`.messages`) or
  :mod:`.remote` (a URL: headers, credentials, and why a connection failed); a server's large line
  kept in a file, its tool result's text never a ``str`` (:mod:`.spill`);
- :mod:`.shaping`: what happens to one tool result (passed, compacted, formatted or cached), after
  :mod:`.result_text` has read what it says;
- :mod:`.answer_text`: the text of a cached answer (execution id, structure tree, hint).

The tools the proxy adds (``read_fields``, ``edit_fields``) are defined in
:mod:`pflow_structure.mcp.tools`, which the server (:mod:`pflow_structure.mcp.server`) shares.
"""
