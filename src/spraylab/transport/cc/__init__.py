"""Congestion controls of the requester, one module each (see ``base``)."""
