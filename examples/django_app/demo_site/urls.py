"""Views that call MCP tools through this process's Hub (``mcp_lite.contrib.django``)."""

from __future__ import annotations

import os

from django.http import HttpRequest, JsonResponse
from django.urls import path

from mcp_lite.contrib.django import get_hub


def add(request: HttpRequest) -> JsonResponse:
    result = get_hub().call_tool(
        "mcp__demo__add", {"a": int(request.GET["a"]), "b": int(request.GET["b"])}
    )
    return JsonResponse({"result": result.text, "pid": os.getpid()})


def tools(request: HttpRequest) -> JsonResponse:
    return JsonResponse(get_hub().tool_definitions(format="openai"), safe=False)


def status(request: HttpRequest) -> JsonResponse:
    return JsonResponse({name: {"state": s.state, "error": s.error}
                         for name, s in get_hub().status().items()})


urlpatterns = [path("add", add), path("tools", tools), path("status", status)]
