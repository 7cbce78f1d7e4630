"""What the code says about each parameter of the entry: the facts the use gatherers collect and the solver
turns into a draft (kinds, string literals, None tests, dimensions tied to other arguments, dtypes, index
ranges). Every fact keeps a short piece of evidence ("view() size, line 12") so a reader can check it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DimRef:
    """Dimension `axis` of tensor parameter `param` (negative axes count from the end)."""

    param: str
    axis: int

    def __str__(self) -> str:
        return f"{self.param}.shape[{self.axis}]"


@dataclass(frozen=True)
class IntRef:
    """The value of integer parameter `param`."""

    param: str

    def __str__(self) -> str:
        return self.param


Ref = DimRef | IntRef


@dataclass(frozen=True)
class Tie:
    """Two sizes the code needs equal (`a.shape[-1] == n`, a matmul's inner dimensions, a broadcast)."""

    a: Ref
    b: Ref
    why: str
    firm: bool = True  # False for broadcasts, where a size of 1 would also do


@dataclass
class ParamFacts:
    name: str
    int_uses: list[str] = field(default_factory=list)
    number_uses: list[str] = field(default_factory=list)  # arithmetic, comparisons with numbers
    tensor_uses: list[str] = field(default_factory=list)
    object_uses: list[str] = field(default_factory=list)  # attributes no tensor has
    called: list[str] = field(default_factory=list)
    truth_tests: list[str] = field(default_factory=list)
    none_tests: list[str] = field(default_factory=list)
    asserted_none: list[str] = field(default_factory=list)  # `assert p is None`: the only path there is
    literals: list[str] = field(default_factory=list)  # string literals it is compared with, in order
    casts: list[str] = field(default_factory=list)  # dtypes it is cast to ("float32")
    dtype_compared: list[str] = field(default_factory=list)  # `p.dtype == torch.bfloat16`
    index_uses: list[str] = field(default_factory=list)  # indexes another tensor -> an integer tensor
    mask_uses: list[str] = field(default_factory=list)  # masked_fill / where / ~ -> a boolean tensor
    index_into: list[DimRef] = field(default_factory=list)  # its values index these dimensions
    index_parts: int = 1  # summed with this many other tensors into an index (`positions + offsets`)
    value_range: list[DimRef] = field(default_factory=list)  # compared with arange(dim): values in [1, dim]
    upper_bounds: list[DimRef] = field(default_factory=list)  # an int that slices / is compared with these
    min_rank: int = 0
    exact_rank: int | None = None
    probability_uses: list[str] = field(default_factory=list)  # torch.multinomial(p): rows of probabilities
    # F.layer_norm(x, p): a tuple of sizes, the trailing dims of these tensor parameters
    shape_of: list[str] = field(default_factory=list)
    row_vector: list[str] = field(default_factory=list)  # p[:, None], p.view(-1, 1): one value per row
    col_vector: list[str] = field(default_factory=list)  # p[None], p.unsqueeze(0): one value per column
    # `batch_size, num_spec_tokens = p.shape`: the names the code gives its dimensions (axis -> name)
    dim_names: dict[int, str] = field(default_factory=dict)

    def note(self, bucket: str, text: str) -> None:
        items: list[str] = getattr(self, bucket)
        if text not in items:
            items.append(text)


@dataclass
class UseFacts:
    """Facts about the entry's parameters, gathered over the entry and the helpers it calls."""

    params: dict[str, ParamFacts]
    ties: list[Tie] = field(default_factory=list)
    dtype_ties: list[tuple[str, str, str]] = field(default_factory=list)  # (param, param, why)
    line_params: dict[int, set[str]] = field(default_factory=dict)  # reference.py line -> entry params used
    doc_shapes: dict[str, list[str]] = field(default_factory=dict)  # param -> dims named in a docstring

    def add_tie(self, tie: Tie) -> None:
        if tie.a != tie.b and tie not in self.ties:
            self.ties.append(tie)
