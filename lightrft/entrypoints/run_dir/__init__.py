"""The run directory every verb that writes a run shares: its lock and start decision
(``directory``), the guard around a run (``guard``), the resume identity (``identity``), the
start history (``history``) and the atomic final export (``final_export``)."""
