"""(filled by its issue work)"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
