"""The labelled benchmark of reasoning completions for mode discovery.

    python -m benchmarks.modes_data            # rewrite tests/data/modes_benchmark.jsonl

**How it was written.** By hand, as templates: eleven problem types of six kinds (arithmetic,
algebra, counting, geometry, word problems, short code), each with 3–5 genuinely different
solution methods (e.g. for ``a × b``: the standard algorithm, the distributive split, doubling
and halving, rounding and compensating). Every method has six phrasings written separately --
three *short* (one or two sentences, 5–35 words) and three *long* (a chain of thought of 40–90
words: the steps, a check, after a restatement of the problem) -- with different vocabulary and
sentence order, and the numbers of each problem filled in (operands, intermediate results, the
answer). Every type is instantiated four times with other numbers, names and objects: 44
problems. To each text a random opener and closing sentence are added (from shared lists), so
the words that do not belong to the method vary too. The wrong solutions are of four kinds:
``slip`` (a method's text with an arithmetic slip: a wrong intermediate and final number),
``misread`` (the right kind of work on a misread problem: another operation or number),
``guess`` (a bare wrong answer, no reasoning) and ``truncated`` (a long chain cut off before the
answer).

**Labels.** A correct completion's mode is its method; a wrong one's is ``slip:<method>``,
``truncated:<method>``, ``misread`` or ``guess``. Groups are one problem and one length
(short or long): every method five times (its three phrasings of that length, with
other openers and closings), plus four wrong completions.

**Split.** By problem: instances 0–1 of every type are the development set, 2–3 the held-out
test set (same types, other numbers and names) -- no setting is tuned on the test set.

**Limits (honest).** Template text, not sampled from a language model: the phrasings of a method
share its key terms ("factor", "quadratic formula") more reliably than real rollouts do, and real
rollouts mix methods, make partial progress and ramble. The numbers differ between methods of a
problem only where the methods compute different intermediates. Written in one sitting by one
author; the long texts are at most ~90 words (real chains of thought are often longer than the
model's 256-word-piece window). Treat results as a lower bar: a method that fails here fails on
real text; one that passes here may still fail on real text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "modes_benchmark.jsonl"
INSTANCES, DEV = 4, (0, 1)
SHORT, LONG = 3, 3  # phrasings per method and length

NAMES = ["Ana", "Ben", "Carla", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kemal", "Lia"]
OBJECTS = ["apples", "marbles", "coins", "books", "stamps", "pencils", "cards", "shells"]
OPEN = ["", "", "Let's think step by step. ", "Solution: ", "Okay. ", "Here is my reasoning. ",
        "We work it out. "]
RESTATE = ["The problem: {q} ", "We are asked the following. {q} ", "Question: {q} Let me think. ",
           "{q} ", "Restating the task: {q} "]
CLOSE = ["The answer is {ans}.", "Final answer: {ans}.", "So the answer is {ans}.",
         "Answer: {ans}.", "Therefore the result is {ans}.", "\\boxed{{{ans}}}"]


# ---- the problem types: slots(rng) -> numbers; methods: name -> (short phrasings, long ones) --

def _add(r):
    a, b = r.randint(23, 89), r.randint(23, 89)
    while a % 10 == 0:  # a carry must be possible
        a = r.randint(23, 89)
    while (a % 10) + (b % 10) < 10:
        b = r.randint(23, 89)
    up = 10 - b % 10
    return dict(q=f"What is {a} + {b}?", a=a, b=b, ans=a + b, at=a // 10 * 10, ao=a % 10,
                bt=b // 10 * 10, bo=b % 10, tens=a // 10 * 10 + b // 10 * 10,
                ones=a % 10 + b % 10, up=up, br=b + up, ar=a + b + up, bad=a + b - 10,
                mis=abs(a - b), carry=(a % 10 + b % 10) - 10)


ADD = {
    "column": (
        ["Line them up in columns: {ao} + {bo} = {ones}, write {carry} carry 1; then "
         "{at} + {bt} plus the carried ten gives {ans}.",
         "Column addition: ones {ao}+{bo}={ones}, carry the 1 into the tens column, total {ans}.",
         "Stack {a} over {b}, add the ones column with a carry and then the tens column: {ans}."],
        ["I will use the standard written algorithm. Write {a} above {b} so the digits line up. "
         "Start with the ones column: {ao} plus {bo} is {ones}, so I write down {carry} and carry "
         "a 1 to the tens column. In the tens column the digits plus the carried 1 give the "
         "tens of the result. Reading the digits off the bottom row gives {ans}.",
         "Vertical addition, right to left. The units digits {ao} and {bo} sum to {ones}; that "
         "is more than nine, so I keep {carry} in the units place and carry one ten over. Next "
         "the tens digits are added together with the carry. The bottom row now reads {ans}, "
         "and a quick estimate ({at} + {bt} is a bit less) agrees.",
         "Set up the sum as a column problem with {a} on top and {b} underneath. Ones column "
         "first: {ao} + {bo} = {ones}, write the {carry}, carry 1. Tens column: add the two "
         "tens digits and the carried 1. Nothing is left to carry, so the written total under "
         "the line is {ans}."]),
    "place value": (
        ["Split into tens and ones: {at} + {bt} = {tens} and {ao} + {bo} = {ones}, and "
         "{tens} + {ones} = {ans}.",
         "Break both numbers apart by place value: tens make {tens}, ones make {ones}, "
         "together {ans}.",
         "Tens plus tens is {tens}, ones plus ones is {ones}; recombine to get {ans}."],
        ["Decompose each addend by place value. {a} is {at} and {ao}; {b} is {bt} and {bo}. "
         "Adding the tens parts gives {at} + {bt} = {tens}. Adding the ones parts gives "
         "{ao} + {bo} = {ones}. Finally put the partial sums back together: {tens} + {ones} = "
         "{ans}. No carrying is needed because each place was handled on its own.",
         "I like to partition numbers. First partition {a} into {at} + {ao} and {b} into "
         "{bt} + {bo}. The tens give a partial sum of {tens}, the ones a partial sum of "
         "{ones}. Recombining the two partial sums, {tens} + {ones} equals {ans}, which is the "
         "total we want.",
         "Think of the numbers as tens and ones blocks. There are {at} and {bt} in ten-rods, "
         "which is {tens} altogether, and {ao} and {bo} unit cubes, which is {ones}. Trading "
         "ten unit cubes for a rod is automatic once we add {tens} and {ones}: we get {ans}."]),
    "compensation": (
        ["Round {b} up to {br} (adding {up}), compute {a} + {br} = {ar}, then take the {up} "
         "back off: {ans}.",
         "Make a friendly number: {a} + {br} = {ar}, and since we added {up} too many, "
         "subtract it to get {ans}.",
         "Compensation: {b} is {up} less than {br}, so {a} + {b} = {ar} - {up} = {ans}."],
        ["Adding a round number is easy, so let me use compensation. {b} is close to {br}; it "
         "is exactly {up} less. So first add the round number: {a} + {br} = {ar}. Because I "
         "added {up} more than I should have, I now subtract {up} from {ar}. That leaves "
         "{ans}. Compensating like this avoids any carrying in my head.",
         "Strategy: round one addend to the next multiple of ten and adjust afterwards. "
         "Rounding {b} up by {up} gives {br}. The easier sum {a} + {br} is {ar}. The "
         "adjustment undoes the rounding, {ar} minus {up}, which is {ans}. I double-check that "
         "the adjustment has the right sign: we rounded up, so we take away.",
         "Let me change the problem into a nicer one. Instead of {b} I add {br}, which is {up} "
         "more. {a} plus {br} comes to {ar}. The true sum must be {up} smaller than that, so it "
         "is {ans}. Rounding and then compensating is quick for mental math."]),
    "number line": (
        ["On a number line start at {a}, jump {bt} in tens and then {bo} in ones, landing on "
         "{ans}.",
         "Count on from {a}: hop by tens to {a}+{bt}, then hop {bo} ones to reach {ans}.",
         "Jumps on the number line from {a}: one big jump of {bt}, a small jump of {bo}, end "
         "at {ans}."],
        ["Picture an open number line. I place {a} at the left end. Then I make jumps to the "
         "right that add up to {b}: first a jump of {bt}, counting on by tens, and then a jump "
         "of {bo}, counting on by ones. Each jump moves me further along the line, and the "
         "last jump lands at {ans}. So the point where I stop is the sum.",
         "Counting on is a solid way to add. Starting from the larger number {a}, I count up "
         "in tens: that covers {bt} of the {b}. Then I count up the remaining {bo} one at a "
         "time. Keeping track of the hops on a number line, I finish at {ans}, which is "
         "where the count ends.",
         "I draw a number line and mark {a}. To add {b}, I hop forward by ten several times "
         "({bt} in total) and then forward by one {bo} times. Following the hops, the marker "
         "ends at {ans}. Drawing the hops makes it easy to check that the total jump length "
         "is {b}."]),
}


def _mul(r):
    a = r.choice([12, 14, 16, 18, 22, 24, 26, 28])
    b = r.choice([15, 25, 35, 45])
    n = r.choice([1, 2, 3])
    ar = a - (a % 10) + 10 if a % 10 >= 5 else a - (a % 10)
    return dict(q=f"Compute {a} × {b}.", a=a, b=b, ans=a * b, at=a // 10 * 10, ao=a % 10,
                p1=a // 10 * 10 * b, p2=(a % 10) * b, h=a // 2, d=b * 2, ar=ar, diff=ar - a,
                big=ar * b, adj=abs(ar - a) * b, bad=a * b + 10 * n, mis=a + b,
                s1=a * (b % 10), s2=a * (b // 10 * 10), bo=b % 10, bt=b // 10 * 10)


MUL = {
    "long multiplication": (
        ["Long multiplication: {a} × {bo} = {s1}, {a} × {bt} = {s2}, add the rows to get "
         "{ans}.",
         "Write {a} over {b} and multiply digit by digit, rows {s1} and {s2}, sum {ans}.",
         "Standard algorithm: partial products {s1} and {s2} add up to {ans}."],
        ["Use the standard multiplication algorithm. Write {a} on top and {b} below. Multiply "
         "{a} by the ones digit of {b}: that row is {s1}. Then multiply {a} by the tens digit, "
         "shifted one place to the left, which is the row {s2}. Finally add the two rows "
         "together: {s1} + {s2} = {ans}. The written product is {ans}.",
         "Column multiplication. First row: {a} times the units digit gives {s1}. Second row, "
         "with a placeholder zero because we are now multiplying by tens: {s2}. Drawing a line "
         "and adding the rows column by column, carrying where needed, the result at the "
         "bottom is {ans}.",
         "I will multiply the way it is taught in school, one digit of {b} at a time. The "
         "units digit gives the first partial product, {s1}. The tens digit gives the second, "
         "{s2}, written one place further left. Adding the two partial products yields {ans}, "
         "and that is the product of {a} and {b}."]),
    "distributive": (
        ["Split {a} as {at} + {ao}: {at}·{b} = {p1} and {ao}·{b} = {p2}, so the product is "
         "{ans}.",
         "Distribute: ({at} + {ao}) × {b} = {p1} + {p2} = {ans}.",
         "Use the distributive law, {p1} from the tens and {p2} from the ones, total {ans}."],
        ["Apply the distributive property. Rewrite {a} as {at} + {ao}. Then {a} × {b} equals "
         "{at} × {b} + {ao} × {b}. The first term is {p1} and the second term is {p2}. "
         "Adding them gives {p1} + {p2} = {ans}. Breaking the factor apart makes each "
         "multiplication easy enough to do mentally.",
         "An area model helps: draw a rectangle {a} by {b} and cut the side of length {a} "
         "into {at} and {ao}. The two smaller rectangles have areas {p1} and {p2}. The area "
         "of the whole rectangle is the sum of the parts, {ans}, which is the product.",
         "I expand the product. ({at} + {ao}) times {b} distributes over the sum: {at} times "
         "{b} is {p1}, and {ao} times {b} is {p2}. Summing the two pieces, {p1} plus {p2}, I "
         "get {ans}. So {a} × {b} = {ans}."]),
    "doubling and halving": (
        ["Halve {a} and double {b}: {h} × {d} = {ans}.",
         "Doubling and halving keeps the product: {a} × {b} = {h} × {d} = {ans}.",
         "Take half of {a} ({h}) and twice {b} ({d}); their product is {ans}."],
        ["Here a trick works nicely: halving one factor and doubling the other does not "
         "change the product. Half of {a} is {h}, and double {b} is {d}. Now {h} × {d} is "
         "easier because {d} is a round number. Computing it gives {ans}. So the original "
         "product {a} × {b} is also {ans}.",
         "I notice that {b} doubles to a multiple of ten. So rewrite the product by halving "
         "{a} to {h} and doubling {b} to {d}. The product stays the same since we multiplied "
         "by 2 and divided by 2. The new product {h} × {d} equals {ans}, which answers the "
         "question.",
         "Let me rebalance the factors. {a} × {b} = ({a} ÷ 2) × ({b} × 2) = {h} × {d}. "
         "Multiplying by a number ending in zero only needs one small product and a zero at "
         "the end, giving {ans}. Therefore {a} × {b} = {ans}."]),
    "rounding": (
        ["Round {a} to {ar}: {ar} × {b} = {big}, then correct by {adj} to get {ans}.",
         "Use a nearby round factor, {ar} × {b} = {big}, and adjust by {adj}: {ans}.",
         "{ar} times {b} is {big}; fix the rounding with {adj} and the product is {ans}."],
        ["Round the first factor to a multiple of ten and fix it afterwards. {a} is {diff} "
         "away from {ar}. So compute {ar} × {b} = {big} first. The rounding changed the "
         "product by {diff} copies of {b}, which is {adj}. Correcting {big} by {adj} gives "
         "{ans}. This is the compensation method for multiplication.",
         "Multiplying by {ar} is simpler than by {a}. The estimate {ar} × {b} is {big}. Now "
         "account for the error: the difference between {ar} and {a}, times {b}, is {adj}. "
         "Removing or adding that amount as needed brings the estimate to the exact value "
         "{ans}.",
         "Start from an easy product near the real one: {ar} times {b} equals {big}. Because "
         "{ar} is not {a}, the estimate is off by {adj}. After the correction the product "
         "is {ans}. Checking the size, {ans} is close to {big}, as it should be."]),
}


def _lin(r):
    a, x = r.randint(3, 9), r.randint(4, 12)
    b = r.randint(5, 30)
    c = a * x + b
    return dict(q=f"Solve {a}x + {b} = {c}.", a=a, b=b, c=c, ans=x, cb=c - b, bad=x + 1,
                mis=(c + b) // a, g1=x - 2, v1=a * (x - 2) + b, g2=x, v2=c, xp=x + 1,
                vp=a * (x + 1) + b)


LIN = {
    "inverse operations": (
        ["Subtract {b} from both sides to get {a}x = {cb}, then divide by {a}: x = {ans}.",
         "Isolate x: {a}x = {c} - {b} = {cb}, so x = {cb}/{a} = {ans}.",
         "Undo the operations in reverse order: minus {b}, then divide by {a}, giving x = "
         "{ans}."],
        ["To solve the linear equation I isolate the variable. First I remove the constant "
         "term by subtracting {b} from both sides, which leaves {a}x = {cb}. Next I undo the "
         "multiplication by dividing both sides by {a}. That gives x = {cb}/{a} = {ans}. "
         "Substituting back, {a} times {ans} plus {b} is {c}, so it checks.",
         "We want x alone on one side. Step one: take away {b} on each side, giving {a}x = "
         "{cb}. Step two: divide each side by the coefficient {a}. So x equals {ans}. Every "
         "step applied the inverse operation to both sides, so the equation stayed balanced.",
         "Work backwards through what was done to x. It was multiplied by {a} and then {b} "
         "was added, producing {c}. Undoing the addition: {c} - {b} = {cb}. Undoing the "
         "multiplication: {cb} ÷ {a} = {ans}. So the solution is x = {ans}."]),
    "guess and check": (
        ["Try x = {g1}: {v1}, too small. Try x = {ans}: {a}·{ans} + {b} = {c}. So x = {ans}.",
         "Guess and check: x = {g1} gives {v1}, x = {ans} gives exactly {c}.",
         "Test values: {g1} fails ({v1}), {ans} works ({c}), so x = {ans}."],
        ["I will guess and check. If x = {g1}, then {a}x + {b} = {v1}, which is less than "
         "{c}, so x must be bigger. If x = {xp}, the left side is {vp}, which overshoots. "
         "Trying x = {ans} in between: {a} times {ans} plus {b} is exactly {c}. The guess "
         "works, so x = {ans}.",
         "Let me just try numbers. A first guess of {g1} gives {v1}; too low. Increasing the "
         "guess, {xp} gives {vp}, too high. The value between them, {ans}, gives {c}, "
         "matching the right side. Trial and error finds x = {ans}.",
         "Trial and improvement: plug in candidate values of x and compare with {c}. Guess "
         "{g1}: the left side is {v1}, short of {c}. Guess {ans}: the left side is {c}, a "
         "match. No other value works because the left side grows as x grows. Hence x = "
         "{ans}."]),
    "balance model": (
        ["Picture a balance: {a} bags of x and {b} weights equal {c}; remove {b} weights from "
         "each pan, share the {cb} among {a} bags: {ans} each.",
         "On a scale, take {b} units off both pans, then split {cb} into {a} equal bags: x = "
         "{ans}.",
         "Balance scale: {a} boxes plus {b} cubes balance {c} cubes, so one box weighs {ans}."],
        ["Think of the equation as a balance scale. The left pan holds {a} identical bags, "
         "each with x marbles, plus {b} loose marbles; the right pan holds {c} marbles. "
         "Taking {b} loose marbles from each pan keeps it level, leaving {a} bags against "
         "{cb} marbles. Sharing those equally among the {a} bags, each bag holds {ans}.",
         "A pan balance model makes this concrete. The {a} unknown boxes and {b} unit blocks "
         "on one side weigh the same as {c} unit blocks on the other. Removing the same "
         "{b} blocks from both sides, the boxes alone balance {cb} blocks. Dividing into "
         "{a} equal groups shows each box is worth {ans}.",
         "Imagine a seesaw that is level. On the left: {a} mystery cups and {b} coins. On the "
         "right: {c} coins. Remove {b} coins from both ends; still level. Now {a} cups "
         "balance {cb} coins, so one cup equals {ans} coins, which is x."]),
}


def _quad(r):
    p, s = r.choice([(2, 3), (1, 4), (2, 5), (3, 4), (1, 6), (2, 7), (3, 5)])
    b, c = p + s, p * s
    disc = (s - p) ** 2
    return dict(q=f"Solve x^2 - {b}x + {c} = 0.", p=p, s=s, b=b, c=c, disc=disc,
                rt=s - p, h=f"{b}/2", hh=f"{b * b}/4", ans=f"{p} and {s}",
                bad=f"{p + 1} and {s - 1}", mis=f"-{p} and -{s}")


QUAD = {
    "factoring": (
        ["Factor: {p}·{s} = {c} and {p} + {s} = {b}, so (x - {p})(x - {s}) = 0, x = {p} or "
         "{s}.",
         "The quadratic factors as (x - {p})(x - {s}), giving roots {p} and {s}.",
         "Find two numbers with product {c} and sum {b}: {p} and {s}; factor and read off "
         "the roots."],
        ["I will solve by factoring. I need two numbers whose product is the constant {c} "
         "and whose sum is {b}, the negated middle coefficient. Going through the factor "
         "pairs of {c}, the pair {p} and {s} works. So the quadratic equals (x - {p})(x - "
         "{s}). A product is zero exactly when a factor is zero, hence x = {p} or x = {s}.",
         "Factoring is quickest here. List factor pairs of {c} and look for one that adds "
         "to {b}: {p} and {s} do. Write x^2 - {b}x + {c} = (x - {p})(x - {s}) = 0. Setting "
         "each bracket to zero, the solutions are {p} and {s}. Expanding the brackets gives "
         "the original polynomial back, so the factorisation is right.",
         "Try to split the trinomial into two binomials. Their constants must multiply to "
         "{c} and add up to {b}. The numbers {p} and {s} satisfy both. Therefore "
         "(x - {p})(x - {s}) = 0, and by the zero product property the roots are x = {p} "
         "and x = {s}."]),
    "quadratic formula": (
        ["Quadratic formula with a = 1, b = -{b}, c = {c}: discriminant {disc}, x = ({b} ± "
         "{rt})/2, so {p} and {s}.",
         "x = ({b} ± sqrt({disc}))/2 gives x = {s} or x = {p}.",
         "Apply x = (-b ± √(b² - 4ac))/2a; the discriminant is {disc}, roots {p} and {s}."],
        ["Use the quadratic formula x = (-b ± sqrt(b^2 - 4ac)) / (2a). Here a = 1, b = -{b} "
         "and c = {c}. The discriminant is b^2 - 4ac = {disc}, whose square root is {rt}. "
         "So x = ({b} + {rt})/2 = {s} or x = ({b} - {rt})/2 = {p}. Both roots are real and "
         "distinct because the discriminant is positive.",
         "The general formula always works, so let me apply it. Identify the coefficients: "
         "a is 1, b is -{b}, c is {c}. Compute the discriminant, {disc}. Its root is {rt}. "
         "Plugging into the formula, the two solutions are ({b} plus {rt}) over 2 and ({b} "
         "minus {rt}) over 2, that is {s} and {p}.",
         "Reading off a = 1, b = -{b}, c = {c}, I evaluate b squared minus four a c, which "
         "comes to {disc}. Then x equals negative b plus or minus the square root of that, "
         "all over two a. With sqrt({disc}) = {rt}, the roots are {s} and {p}."]),
    "completing the square": (
        ["Complete the square: (x - {h})^2 = {hh} - {c}, so x = {h} ± {rt}/2, i.e. {p} or "
         "{s}.",
         "Rewrite as (x - {h})^2 = {disc}/4 and take square roots: x = {p} or x = {s}.",
         "Completing the square gives (x - {h})^2 = {disc}/4, roots {p} and {s}."],
        ["Complete the square. Move the constant across: x^2 - {b}x = -{c}. Half of the "
         "linear coefficient is {h}; its square is {hh}. Adding {hh} to both sides makes the "
         "left side a perfect square, (x - {h})^2 = {hh} - {c} = {disc}/4. Taking square "
         "roots, x - {h} = ± {rt}/2, so x = {s} or x = {p}.",
         "I want the form (x - h)^2 = k. Take half of {b}, namely {h}, and square it to get "
         "{hh}. Then x^2 - {b}x + {c} = (x - {h})^2 - {hh} + {c}. Setting this to zero gives "
         "(x - {h})^2 = {disc}/4. Square roots on both sides give the two solutions {p} and "
         "{s}.",
         "By completing the square the quadratic turns into a shifted square. The vertex is "
         "at x = {h}, and the square (x - {h})^2 must equal {disc}/4 for the expression to "
         "vanish. So x sits {rt}/2 to either side of {h}, at {p} and at {s}."]),
    "sum and product": (
        ["By Vieta the roots add to {b} and multiply to {c}; {p} and {s} fit.",
         "Vieta's formulas: r1 + r2 = {b}, r1·r2 = {c}, so the roots are {p} and {s}.",
         "Roots with sum {b} and product {c} are {p} and {s} (Vieta)."],
        ["Use Vieta's relations for a monic quadratic x^2 - Sx + P: the roots sum to S and "
         "multiply to P. Here S = {b} and P = {c}. So I need two numbers with sum {b} and "
         "product {c}. Checking candidates, {p} + {s} = {b} and {p} × {s} = {c}. The roots "
         "are therefore {p} and {s}.",
         "The coefficients of a monic quadratic encode the sum and product of its roots "
         "(Vieta's formulas). The sum must be {b}, the product {c}. Writing the roots as "
         "{b}/2 ± d and using the product, d works out so that the roots are {p} and {s}. "
         "Both relations check.",
         "Let the roots be r and t. Vieta says r + t = {b} and r t = {c}. These two "
         "conditions pin the pair down: among numbers adding to {b}, only {p} and {s} have "
         "product {c}. So the solutions are {p} and {s}."]),
}


def _choose(r):
    n, k = r.choice([(5, 2), (6, 2), (5, 3), (6, 3), (7, 2), (4, 2)])
    import math

    ans = math.comb(n, k)
    perm = math.perm(n, k)
    return dict(q=f"How many ways can a committee of {k} be chosen from {n} people?", n=n, k=k,
                ans=ans, perm=perm, kf=math.factorial(k), row=n, nk=n - k, a1=math.comb(n - 1,
                k - 1), a2=math.comb(n - 1, k), bad=ans + n, mis=perm)


CHOOSE = {
    "formula": (
        ["C({n},{k}) = {n}!/({k}!{nk}!) = {ans}.",
         "Use the binomial coefficient: {n} choose {k} equals {ans}.",
         "The number of {k}-subsets of {n} is n!/(k!(n-k)!) = {ans}."],
        ["Order does not matter in a committee, so this is a combination. The count is the "
         "binomial coefficient C({n}, {k}) = {n}! / ({k}! · {nk}!). Cancelling the common "
         "factorials, the numerator keeps the top {k} factors of {n}!, and dividing by {k}! "
         "leaves {ans}. So there are {ans} possible committees.",
         "Committees are unordered selections, counted by n choose k. With n = {n} and k = "
         "{k}, the factorial formula n!/(k!(n-k)!) evaluates to {ans}. I double-check the "
         "arithmetic by cancelling before multiplying, which again gives {ans}.",
         "Apply the combinations formula directly. C(n,k) = n! over k! times (n-k)!. Here "
         "that is {n}! over {k}! times {nk}!. Simplifying the factorials step by step "
         "produces {ans}. That is the number of ways to pick the committee."]),
    "ordered then divide": (
        ["Pick in order: {perm} ordered choices, each committee counted {kf} times, so "
         "{perm}/{kf} = {ans}.",
         "Count ordered picks ({perm}) and divide by the {kf} orders of the same group: "
         "{ans}.",
         "First, second, ... choices give {perm}; divide out the {kf} arrangements: {ans}."],
        ["First count ordered selections: there are {n} choices for the first seat, one "
         "fewer for the next, and so on for {k} seats, giving {perm} ordered lists. But a "
         "committee does not care about order, and each committee appears in {kf} different "
         "orders. Dividing, {perm} / {kf} = {ans} committees.",
         "Imagine appointing members one at a time. The multiplication principle gives "
         "{perm} sequences of appointments. Every set of {k} people was produced {kf} times, "
         "once per ordering of its members. So the number of distinct committees is {perm} "
         "divided by {kf}, which is {ans}.",
         "Overcount and correct. Ordered picks: {perm}. Orderings of one fixed committee: "
         "{k}! = {kf}. Because each committee is overcounted by exactly that factor, the "
         "answer is {ans}."]),
    "pascal": (
        ["Pascal's triangle: row {n}, entry {k} is {ans}.",
         "Build Pascal's triangle down to row {n}; the entry in position {k} is {ans}.",
         "By Pascal's rule C({n},{k}) = {a1} + {a2} = {ans}."],
        ["Use Pascal's triangle, where each entry is the sum of the two above it. Writing out "
         "the rows 1; 1 1; 1 2 1; 1 3 3 1; and continuing down to row {n}, the entry in "
         "position {k} counts the {k}-element subsets. Reading it off the triangle gives "
         "{ans}.",
         "Pascal's identity C(n,k) = C(n-1,k-1) + C(n-1,k) splits the committees by whether "
         "a particular person is on it. Those containing that person number {a1}; those "
         "without number {a2}. Adding the two cases, {a1} + {a2} = {ans}.",
         "I build the triangle row by row, adding neighbours: each number is the sum of the "
         "two above. By row {n} the entries are symmetric, and the one in place {k} is {ans}. "
         "That is how many committees there are."]),
    "listing": (
        ["List them systematically (AB, AC, ... ) and count: {ans} committees.",
         "Label the people A, B, C, ... and write every group of {k}; the list has {ans} "
         "entries.",
         "Enumerate all possible groups of {k} in alphabetical order: {ans} of them."],
        ["Label the {n} people with letters A, B, C and so on. I list the committees in "
         "alphabetical order, always keeping the letters inside a committee increasing so "
         "that nothing is written twice: start with every committee containing A, then "
         "those whose first letter is B, and so on. Counting the lines of the list, there are "
         "{ans} committees.",
         "With so few people, just enumerate. Name them A through the {n}th letter and write "
         "down each possible group of {k}, making sure the letters go in increasing order to "
         "avoid duplicates. When the list is complete I count the entries: {ans}.",
         "A systematic list works. Fix the first member as A and list all ways to complete "
         "the committee, then fix B as the first member with only later letters allowed, "
         "and continue. Tallying the rows of this list gives {ans} different committees."]),
}


def _tri(r):
    u, v, w = r.choice([(3, 4, 5), (5, 12, 13), (8, 15, 17)])
    m = r.choice([1, 2, 3])
    a, b, c = u * m, v * m, w * m
    return dict(q=f"A right triangle has legs {a} and {b}. How long is the hypotenuse?", a=a,
                b=b, ans=c, a2=a * a, b2=b * b, s=a * a + b * b, u=u, v=v, w=w, m=m,
                bad=a + b, mis=abs(b - a))


TRI = {
    "pythagoras": (
        ["By Pythagoras, c^2 = {a}^2 + {b}^2 = {a2} + {b2} = {s}, so c = {ans}.",
         "Hypotenuse = sqrt({a}² + {b}²) = sqrt({s}) = {ans}.",
         "Pythagorean theorem: square the legs, add them ({s}), take the root: {ans}."],
        ["In a right triangle the square of the hypotenuse equals the sum of the squares of "
         "the legs. Squaring the legs gives {a2} and {b2}. Their sum is {s}. The hypotenuse "
         "is the square root of {s}, which is {ans} since {ans} times {ans} is {s}. So the "
         "hypotenuse has length {ans}.",
         "Apply the Pythagorean theorem, a^2 + b^2 = c^2. With a = {a} and b = {b}: "
         "{a2} + {b2} = {s} = c^2. Taking the positive square root, c = {ans}. A length "
         "must be positive, so the negative root is discarded.",
         "The theorem of Pythagoras relates the three sides. I compute {a} squared, {a2}, "
         "and {b} squared, {b2}, and add them to get {s}. The hypotenuse squared equals "
         "{s}, so the hypotenuse itself equals {ans}."]),
    "similar triple": (
        ["The legs {a}, {b} are {m} times the {u}-{v}-{w} triple, so the hypotenuse is "
         "{m}·{w} = {ans}.",
         "Recognise a scaled {u}-{v}-{w} right triangle (factor {m}): hypotenuse {ans}.",
         "{a}:{b} = {u}:{v}, a known Pythagorean triple, scale {w} by {m} to get {ans}."],
        ["I recognise a Pythagorean triple. Dividing the legs by {m} gives {u} and {v}, "
         "which belong to the famous {u}-{v}-{w} right triangle. Our triangle is similar to "
         "it with scale factor {m}, so every side is multiplied by {m}, including the "
         "hypotenuse: {w} times {m} is {ans}. No square roots are needed.",
         "The ratio of the legs {a} : {b} reduces to {u} : {v}. A right triangle with legs "
         "{u} and {v} has hypotenuse {w}, a standard triple memorised by many students. By "
         "similarity the given triangle is that one enlarged {m} times, so its hypotenuse is "
         "{ans}.",
         "Look for a common factor of the legs: {m}. Removing it leaves {u} and {v}, the "
         "legs of a {u}-{v}-{w} triangle. Similar triangles scale all sides together, hence "
         "the hypotenuse is {m} × {w} = {ans}."]),
    "coordinates": (
        ["Put the vertices at (0,0), ({a},0), (0,{b}); the distance between the last two is "
         "sqrt({s}) = {ans}.",
         "With coordinates (0,{b}) and ({a},0), the distance formula gives {ans}.",
         "Place the right angle at the origin; the hypotenuse joins ({a},0) and (0,{b}), "
         "length {ans}."],
        ["Set up coordinates. Put the right angle at the origin, one leg along the x-axis to "
         "the point ({a}, 0) and the other along the y-axis to (0, {b}). The hypotenuse is "
         "the segment between these two points. The distance formula gives sqrt(({a} - 0)^2 "
         "+ (0 - {b})^2) = sqrt({s}) = {ans}.",
         "Analytic geometry: vertices at (0,0), ({a},0) and (0,{b}). The length of the side "
         "opposite the origin is the distance between ({a},0) and (0,{b}). The differences "
         "in x and y are {a} and {b}; the distance works out to {ans}.",
         "Model the triangle on a grid with the legs on the axes. The far ends of the legs "
         "are the points ({a},0) and (0,{b}). Using the distance between two points in the "
         "plane, the hypotenuse has length {ans}."]),
}


def _trap(r):
    a, b = r.choice([(6, 10), (4, 12), (8, 14), (5, 9), (7, 13)])
    h = r.choice([4, 6, 8])
    return dict(q=f"A trapezoid has parallel sides {a} and {b} and height {h}. Find its area.",
                a=a, b=b, h=h, ans=(a + b) * h // 2, s=a + b, avg=(a + b) // 2, rect=a * h,
                tri=(b - a) * h // 2, dd=b - a, par=(a + b) * h, bad=(a + b) * h,
                mis=a * b)


TRAP = {
    "formula": (
        ["Area = (a + b)/2 · h = ({a} + {b})/2 · {h} = {ans}.",
         "Use A = ½(b1 + b2)h: ½·{s}·{h} = {ans}.",
         "The trapezoid formula with bases {a}, {b} and height {h} gives {ans}."],
        ["Use the area formula for a trapezoid: one half of the sum of the parallel sides "
         "times the height. The parallel sides add to {a} + {b} = {s}. Multiplying by the "
         "height gives {par}, and half of that is {ans}. So the area is {ans} square units.",
         "The standard formula is A = (b1 + b2) h / 2. Substituting the bases {a} and {b} "
         "and the height {h}: the sum of the bases is {s}, times {h} is {par}, divided by 2 "
         "is {ans}. Units are square units.",
         "Recall A = ½ (a + b) h for a trapezoid with parallel sides a and b. Plugging in "
         "a = {a}, b = {b}, h = {h} yields ½ · {s} · {h}, which simplifies to {ans}."]),
    "decompose": (
        ["Cut it into a {a}-by-{h} rectangle ({rect}) and triangles of total base {dd} "
         "({tri}): {ans}.",
         "Rectangle {rect} plus the triangles {tri} give area {ans}.",
         "Split into a rectangle and two right triangles: {rect} + {tri} = {ans}."],
        ["Decompose the trapezoid. Drop perpendiculars from the ends of the shorter side. "
         "The middle piece is a rectangle {a} wide and {h} tall, with area {rect}. The two "
         "side pieces are right triangles whose bases add up to {b} - {a} = {dd}, with "
         "total area {dd} · {h} / 2 = {tri}. Adding the pieces: {rect} + {tri} = {ans}.",
         "I split the shape into simpler ones. A central rectangle of width {a} and height "
         "{h} has area {rect}. What remains are two triangles; pushed together they form one "
         "triangle of base {dd} and height {h}, area {tri}. The whole area is {ans}.",
         "Cutting along the heights gives one rectangle and two triangles. Rectangle: {a} "
         "by {h}, area {rect}. Triangles: combined base {dd}, height {h}, area {tri}. Sum of "
         "the pieces is {ans}, the area of the trapezoid."]),
    "doubling": (
        ["Two copies make a parallelogram of base {s} and height {h}, area {par}; half is "
         "{ans}.",
         "Rotate a copy and join it: parallelogram {s} × {h} = {par}, so the trapezoid is "
         "{ans}.",
         "Double the trapezoid into a parallelogram ({par}) and halve: {ans}."],
        ["Take a second copy of the trapezoid, rotate it by 180 degrees and place it next to "
         "the first so the slanted sides meet. Together they form a parallelogram whose "
         "base is {a} + {b} = {s} and whose height is still {h}. Its area is {par}. Our "
         "trapezoid is exactly half of it, so its area is {ans}.",
         "A nice picture: two identical trapezoids, one flipped, fit together into a "
         "parallelogram. Its base is the sum of the parallel sides, {s}, and its height is "
         "{h}, so its area is {par}. Since it is made of two copies, one trapezoid has area "
         "{ans}.",
         "Flip and attach a copy. The result is a parallelogram with base {s} and height "
         "{h}, area {par}. Dividing by two for the two copies gives {ans}."]),
    "midline": (
        ["The midline is ({a} + {b})/2 = {avg}; area = midline × height = {avg} · {h} = "
         "{ans}.",
         "Average the bases to {avg} and multiply by the height {h}: {ans}.",
         "A trapezoid has the area of a rectangle as wide as its midline: {avg} × {h} = "
         "{ans}."],
        ["The segment joining the midpoints of the legs, the midline, has length equal to "
         "the average of the bases: ({a} + {b}) / 2 = {avg}. Cutting off the corner "
         "triangles at the midline and swinging them round turns the trapezoid into a "
         "rectangle {avg} wide and {h} tall. So the area is {avg} × {h} = {ans}.",
         "Replace the trapezoid by a rectangle of the same area. Its width is the mean of the "
         "two parallel sides, {avg}, because what one side lacks the other has in excess. "
         "Its height is {h}. The rectangle's area, and so the trapezoid's, is {ans}.",
         "Average width times height. The width changes linearly from {a} to {b}, so its "
         "average is {avg}. Multiplying the average width by the height {h} gives the area, "
         "{ans}."]),
}


def _speed(r):
    v = r.choice([40, 45, 50, 60, 75])
    t = r.choice([2, 3, 4])
    d = v * t
    name = r.choice(NAMES)
    return dict(q=f"{name} drives {d} km at {v} km/h. How many hours does it take?", name=name,
                v=v, t=t, d=d, ans=t, half=v // 2 if v % 2 == 0 else v / 2, bad=t + 1,
                mis=d * v, m=60 * d // v)


SPEED = {
    "formula": (
        ["time = distance / speed = {d}/{v} = {ans} hours.",
         "Use t = d/v: {d} ÷ {v} = {ans} h.",
         "Divide the distance by the speed: {ans} hours."],
        ["Use the relation distance = speed × time, rearranged to time = distance ÷ speed. "
         "The distance is {d} km and the speed is {v} km/h. Dividing, {d} / {v} = {ans}. The "
         "kilometres cancel and the unit left is hours, so the trip takes {ans} hours.",
         "Speed, distance and time are linked by d = v t. Solving for t gives t = d / v. "
         "Substituting d = {d} and v = {v}, t comes to {ans}. Checking, {v} times {ans} is "
         "{d}, the full distance.",
         "The formula time equals distance over speed applies because the speed is constant. "
         "{d} divided by {v} is {ans}. So {name} needs {ans} hours for the drive."]),
    "hour by hour": (
        ["After 1 hour {v} km, after 2 hours {v}+{v}, ... the total reaches {d} after {ans} "
         "hours.",
         "Add {v} km per hour until you get to {d}: that takes {ans} hours.",
         "Count up the distance hour by hour in steps of {v} km; {d} is reached at hour "
         "{ans}."],
        ["Build it up hour by hour. In the first hour {name} covers {v} km. Each further hour "
         "adds another {v} km, so the running total goes {v}, then twice that, and so on. I "
         "keep adding until the total equals {d} km. That happens after {ans} hours, so the "
         "journey lasts {ans} hours.",
         "Make a table of elapsed hours and distance covered. Hour 1: {v} km. Every row adds "
         "{v} km to the previous one. Continuing the table, the distance column hits {d} "
         "in the row for hour {ans}. So the drive takes {ans} hours.",
         "Repeated addition: each hour contributes {v} km. Adding {v} again and again and "
         "counting how many times I add, I reach the required {d} km after {ans} additions, "
         "which means {ans} hours of driving."]),
    "proportion": (
        ["{v} km takes 60 minutes, so {d} km takes {m} minutes, which is {ans} hours.",
         "Set up the proportion {v}/1 = {d}/t, cross-multiply: t = {ans}.",
         "Scale the ratio {v} km : 1 h up to {d} km : {ans} h."],
        ["Think in ratios. The car goes {v} km in 1 hour, i.e. in 60 minutes. Distance and "
         "time are proportional at a fixed speed, so {d} km takes {d}/{v} times as long: "
         "{m} minutes. Converting minutes to hours by dividing by 60 gives {ans} hours.",
         "A proportion: {v} km is to 1 hour as {d} km is to t hours. Cross-multiplying gives "
         "{v} t = {d}, so t = {ans}. The ratio of distances equals the ratio of times, "
         "which is why the proportion holds.",
         "Use a unit rate and scale it. One hour corresponds to {v} km. The scale factor from "
         "{v} km to {d} km is {ans}, and the time scales by the same factor, so the time is "
         "{ans} hours."]),
}


def _discount(r):
    price = r.choice([40, 60, 80, 120, 150, 200])
    pct = r.choice([10, 20, 25, 30])
    off = price * pct // 100
    return dict(q=f"A jacket costs ${price} and is {pct}% off. What is the sale price?",
                price=price, pct=pct, off=off, ans=price - off, keep=100 - pct,
                frac=round(1 - pct / 100, 2), ten=price // 10, n10=pct // 10,
                bad=price - pct, mis=price + off)


DISCOUNT = {
    "subtract discount": (
        ["The discount is {pct}% of {price} = {off}, so the price is {price} - {off} = "
         "{ans}.",
         "Find the amount off ({off}) and subtract it from {price}: ${ans}.",
         "{pct} percent of ${price} is ${off}; take it away to pay ${ans}."],
        ["First work out how much is taken off. {pct}% of ${price} means {pct}/100 times "
         "{price}, which is ${off}. The sale price is the original price minus the discount: "
         "{price} - {off} = {ans}. So the jacket now costs ${ans}.",
         "Two steps. Step one, the discount in dollars: {pct} hundredths of {price} is {off}. "
         "Step two, subtract that from the marked price: {price} minus {off} leaves {ans}. "
         "The customer pays ${ans}.",
         "Compute the savings and remove them. The savings are {pct} percent of the price, "
         "so {off} dollars. Removing {off} dollars from {price} dollars gives a sale price of "
         "{ans} dollars."]),
    "multiply remainder": (
        ["Paying {keep}% of the price: {frac} × {price} = {ans}.",
         "Multiply {price} by {frac} (100% - {pct}%) to get ${ans}.",
         "The sale price is {keep}% of ${price}, that is ${ans}."],
        ["If {pct}% is taken off, the customer pays the remaining {keep}% of the price. As a "
         "decimal that is {frac}. Multiplying, {frac} × {price} = {ans}. So a single "
         "multiplication gives the sale price directly: ${ans}.",
         "Instead of finding the discount, find what is left. 100% minus {pct}% is {keep}%. "
         "The sale price is {keep}% of ${price}; converting the percentage to the multiplier "
         "{frac} and multiplying gives ${ans}.",
         "Use a multiplier. A {pct}% reduction corresponds to multiplying by {frac}. "
         "Applying that to the original price of {price}, the new price is {ans} dollars."]),
    "ten percent chunks": (
        ["10% of {price} is {ten}; {pct}% is {n10}·{ten} ≈ {off} off, leaving {ans}.",
         "Use 10% steps: each is ${ten}, the discount is {off}, price {ans}.",
         "Find 10% ({ten}) first, build up the {pct}% discount ({off}), subtract: {ans}."],
        ["Percentages are easy in chunks of 10%. Ten percent of {price} is {ten}, found by "
         "moving the decimal point. The discount of {pct}% is made of such chunks (and a "
         "half chunk if needed), which adds up to {off}. Subtracting the discount from the "
         "price gives {ans}.",
         "Start from 10 percent: one tenth of ${price} is ${ten}. Build the {pct} percent "
         "out of tenths and halves of tenths: that totals ${off}. The jacket therefore sells "
         "for ${price} minus ${off}, which is ${ans}.",
         "I find one tenth of the price, {ten}, and scale it up to the required percentage, "
         "giving a discount of {off}. Then the sale price is what remains after removing "
         "it, {ans}."]),
}


def _sumcode(r):
    n = r.choice([10, 20, 50, 100])
    return dict(q=f"Write Python code returning the sum 1 + 2 + ... + {n}.", n=n,
                ans=n * (n + 1) // 2, bad=n * (n - 1) // 2, mis=n * (n + 1), n1=n + 1)


SUMCODE = {
    "for loop": (
        ["total = 0\nfor i in range(1, {n1}):\n    total += i\nprint(total)  # {ans}",
         "Loop over 1..{n} and accumulate: `for i in range(1, {n1}): total += i` gives {ans}.",
         "Use a for loop with an accumulator; it returns {ans}."],
        ["I will accumulate the sum with a loop. Initialise a variable total to 0, then "
         "iterate i over range(1, {n1}) so that i takes every value from 1 to {n}, adding "
         "each to total.\n\ndef f():\n    total = 0\n    for i in range(1, {n1}):\n        "
         "total += i\n    return total\n\nCalling f() returns {ans}.",
         "A straightforward accumulator loop works. Start with s = 0. For each integer i "
         "from 1 through {n} (range(1, {n1}) in Python, since the end is exclusive), add i "
         "to s. After the loop finishes, s holds the sum, which is {ans} when I run it.",
         "Iterative solution: keep a running total and walk through the numbers one by one "
         "with a for statement. The range must stop at {n1} so that {n} is included. The "
         "loop body is a single `total += i`. The printed value is {ans}."]),
    "builtin sum": (
        ["print(sum(range(1, {n1})))  # {ans}",
         "One line: sum(range(1, {n1})) evaluates to {ans}.",
         "Python's built-in sum over range(1, {n1}) returns {ans}."],
        ["Python already has what we need. The built-in function sum adds up any iterable, "
         "and range(1, {n1}) produces the integers 1 to {n}. So the whole program is\n\n"
         "print(sum(range(1, {n1})))\n\nwhich prints {ans}. No explicit loop or extra "
         "variable is required.",
         "Use the standard library idiom: pass a range object to sum(). The range has to "
         "end at {n1} because the stop value is excluded. The expression sum(range(1, {n1})) "
         "evaluates to {ans}. This is the most idiomatic solution.",
         "The cleanest code is a one-liner built from two built-ins, sum and range. "
         "range(1, {n1}) yields 1 through {n}, and sum adds them. Running it gives {ans}."]),
    "closed form": (
        ["Gauss's formula: return {n} * {n1} // 2  # {ans}",
         "Use n(n+1)/2 with n = {n}: {ans}, no loop needed.",
         "Closed form: n * (n + 1) // 2 = {ans}."],
        ["There is no need to loop: the sum of the first n positive integers is n(n+1)/2, "
         "the formula Gauss found by pairing 1 with n, 2 with n-1, and so on. In code:\n\n"
         "def f(n):\n    return n * (n + 1) // 2\n\nf({n}) = {ans}. Integer division keeps "
         "the result an int.",
         "Pair the terms from both ends: 1 + {n}, 2 + {n} - 1, ... each pair sums to {n1}, "
         "and there are {n}/2 pairs. That gives the closed form n(n+1)/2, which runs in "
         "constant time. The code returns {n} * {n1} // 2 = {ans}.",
         "Arithmetic series formula: number of terms times the average of first and last "
         "term. In Python, `n * (n + 1) // 2` with n = {n}. The function returns {ans} "
         "immediately, O(1) instead of O(n)."]),
    "recursion": (
        ["def s(n): return 0 if n == 0 else n + s(n - 1); s({n}) == {ans}",
         "Recursively, s(n) = n + s(n-1) with s(0) = 0, so s({n}) = {ans}.",
         "A recursive function adding n to the sum of the rest gives {ans}."],
        ["Define the sum recursively. The base case is s(0) = 0. Otherwise s(n) = n + "
         "s(n - 1): the sum up to n is n plus the sum up to n - 1.\n\ndef s(n):\n    if n "
         "== 0:\n        return 0\n    return n + s(n - 1)\n\nThe recursion depth is {n}, "
         "well within Python's limit, and s({n}) returns {ans}.",
         "A recursive approach: the function calls itself on a smaller input until it hits "
         "the base case. s(n) returns n plus s(n-1), and s(0) returns 0. Unwinding the calls "
         "from {n} down to 0 and adding on the way back gives {ans}.",
         "Write it with recursion instead of iteration. Base case zero, recursive case n "
         "plus the result for n minus one. Each call reduces the problem by one, so it "
         "terminates. For n = {n} the function returns {ans}."]),
}


def _pal(r):
    w = r.choice(["level", "racecar", "rotor", "kayak", "refer", "stats", "civic"])
    return dict(q=f"Write Python code that checks whether '{w}' is a palindrome.", w=w,
                ans="True", bad="False", mis="False", last=len(w) - 1)


PAL = {
    "slicing": (
        ["return s == s[::-1]  # '{w}' -> True",
         "Compare the string with its reverse slice s[::-1]; for '{w}' this is True.",
         "Use slicing: '{w}' == '{w}'[::-1] evaluates to True."],
        ["The simplest check compares the string to its reverse. In Python a slice with step "
         "-1 reverses a string, so s[::-1] is s backwards.\n\ndef is_pal(s):\n    return s "
         "== s[::-1]\n\nFor '{w}' the reversed string is the same, so the function returns "
         "True.",
         "Reverse with extended slicing and test for equality. s[::-1] walks the string from "
         "the end to the start. If that equals the original, the word reads the same both "
         "ways. '{w}' reversed is '{w}', hence True.",
         "Python slicing makes this a one-liner: the expression s == s[::-1]. The step of "
         "minus one produces the reversed copy. Evaluating it for the word '{w}' gives "
         "True."]),
    "two pointers": (
        ["Use two indices i = 0 and j = {last} moving inward, comparing s[i] and s[j]; all "
         "match, so True.",
         "Two pointers from both ends: every pair of characters of '{w}' agrees, return "
         "True.",
         "while i < j: if s[i] != s[j]: return False; i += 1; j -= 1 — '{w}' gives True."],
        ["Use two pointers. Start i at the first character and j at the last. While i is "
         "less than j, compare s[i] with s[j]; if they differ the string is not a "
         "palindrome, so return False. Otherwise move i forward and j backward. For '{w}' "
         "every comparison matches, the pointers meet in the middle and the function "
         "returns True.",
         "def is_pal(s):\n    i, j = 0, len(s) - 1\n    while i < j:\n        if s[i] != "
         "s[j]:\n            return False\n        i += 1\n        j -= 1\n    return True\n"
         "\nThe pointers close in from both ends. It uses no extra memory. On '{w}' it "
         "returns True.",
         "Walk inward from both ends at once with a left index and a right index, checking "
         "that the characters they point to are equal. Only half the string needs to be "
         "scanned. All pairs of '{w}' agree, so the answer is True."]),
    "loop reverse": (
        ["Build the reversed string character by character in a loop and compare: True for "
         "'{w}'.",
         "rev = ''; for ch in s: rev = ch + rev; return rev == s  # True",
         "Prepend each character to a new string, then compare it with '{w}': True."],
        ["Construct the reverse manually. Start with an empty string rev. Loop over the "
         "characters of s and put each one in front of rev, so the first character ends up "
         "last.\n\nrev = ''\nfor ch in s:\n    rev = ch + rev\nreturn rev == s\n\nFor "
         "'{w}' the constructed string equals the input, giving True.",
         "Without slicing, I reverse the word with an explicit loop that prepends characters "
         "to an accumulator. After the loop the accumulator holds the word backwards. "
         "Comparing it with the original word '{w}' shows they are equal, so the result is "
         "True.",
         "Iterate through the characters, each time adding the current character to the "
         "front of a result string. At the end the result is the reversal. A final equality "
         "test against '{w}' returns True."]),
    "reversed join": (
        ["return s == ''.join(reversed(s))  # True for '{w}'",
         "Join the reversed() iterator back into a string and compare: True.",
         "''.join(reversed('{w}')) == '{w}' is True."],
        ["Use the built-in reversed, which returns an iterator over the characters from the "
         "end. Joining them with ''.join turns the iterator back into a string.\n\ndef "
         "is_pal(s):\n    return s == ''.join(reversed(s))\n\nApplied to '{w}' the "
         "joined string equals the original, so it returns True.",
         "reversed(s) gives the characters in reverse order, but as an iterator, not a "
         "string. The str.join method with an empty separator glues them into a string. If "
         "that equals s, it is a palindrome. For '{w}' the test yields True.",
         "Combine two built-ins: reversed to iterate backwards and join to rebuild a string. "
         "Compare the rebuilt string to the input; '{w}' passes, so True."]),
}

TYPES = {  # name: (kind, slots, methods)
    "add": ("arithmetic", _add, ADD),
    "multiply": ("arithmetic", _mul, MUL),
    "linear": ("algebra", _lin, LIN),
    "quadratic": ("algebra", _quad, QUAD),
    "committee": ("counting", _choose, CHOOSE),
    "hypotenuse": ("geometry", _tri, TRI),
    "trapezoid": ("geometry", _trap, TRAP),
    "travel": ("word problem", _speed, SPEED),
    "discount": ("word problem", _discount, DISCOUNT),
    "sum code": ("code", _sumcode, SUMCODE),
    "palindrome": ("code", _pal, PAL),
}
WRONG = {  # misread problem / bare guess, per kind of answer
    "misread": ["I think the question asks for something else: working it out that way gives "
                "{mis}.", "Reading it quickly, the result comes out as {mis}.",
                "Misreading the numbers, I combine them and get {mis}."],
    "guess": ["{bad}", "It is {bad}.", "Probably {bad}.", "I guess {bad}."],
}


def _slip(text: str, s: dict) -> str:
    """A method's text with an arithmetic slip: the answer replaced by the wrong ``bad``."""
    return text.replace(str(s["ans"]), str(s["bad"]))


def problems():
    """The 44 problems: ``(id, type, kind, instance, slots, methods)``."""
    out = []
    for t, (kind, make, methods) in TYPES.items():
        for i in range(INSTANCES):
            r = random.Random(f"{t}-{i}")
            out.append((f"{t}-{i}", t, kind, i, make(r), methods))
    return out


def _fill(template: str, s: dict) -> str:
    return template.format(**s)


def completions(slots: dict, methods: dict, length: str, r: random.Random, per_method: int = 5,
                wrong: int = 4):
    """One group: ``per_method`` phrasings of every method (cycling through the method's three
    templates of ``length`` with other openers and closings) and ``wrong`` wrong completions;
    a list of ``(text, method, correct, error)``."""
    which = 0 if length == "short" else 1
    out = []
    for m, forms in methods.items():
        temps = forms[which]
        for j in range(per_method):
            body = _fill(temps[j % len(temps)], slots)
            text = r.choice(OPEN) + body
            if length == "long":  # a chain of thought restates the problem first
                text = r.choice(RESTATE).format(q=slots["q"]) + text
            if j >= len(temps) or r.random() < 0.5:
                text += " " + r.choice(CLOSE).format(ans=slots["ans"])
            out.append((text, m, True, ""))
    names = list(methods)
    kinds = ["slip", "misread", "guess", "truncated" if length == "long" else "slip"]
    for j in range(wrong):
        kind = kinds[j % len(kinds)]
        m = names[r.randrange(len(names))]
        if kind == "slip":
            body = _fill(r.choice(methods[m][which]), slots)
            out.append((_slip(body, slots), m, False, "slip"))
        elif kind == "truncated":
            words = _fill(r.choice(methods[m][1]), slots).split()
            out.append((" ".join(words[: len(words) // 2]), m, False, "truncated"))
        else:
            body = r.choice(WRONG[kind]).format(**slots)
            out.append((body, "", False, kind))
    r.shuffle(out)
    return out


def records():
    """Every labelled completion of the benchmark (dicts, in a fixed order)."""
    rows = []
    for pid, t, kind, i, slots, methods in problems():
        split = "dev" if i in DEV else "test"
        for length in ("short", "long"):
            r = random.Random(f"{pid}-{length}")
            for text, m, ok, err in completions(slots, methods, length, r):
                label = m if ok else (f"{err}:{m}" if m else err)
                rows.append({"problem": pid, "type": t, "kind": kind, "split": split,
                             "length": length, "correct": ok, "mode": label, "text": text,
                             "words": len(text.split())})
    return rows


def load(path: Path = PATH) -> list[dict]:
    """The committed benchmark (``tests/data/modes_benchmark.jsonl``)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def synthetic_groups(n_prompts: int, G: int, length: str, seed: int = 0):
    """``n_prompts`` × ``G`` fresh completions (other numbers than the committed set) for timing
    the 256 × 16 workload: ``(texts (P, G) nested list, method labels (P, G))``."""
    r = random.Random(seed)
    types = list(TYPES.values())
    texts, labels = [], []
    for p in range(n_prompts):
        kind, make, methods = types[p % len(types)]
        slots = make(random.Random(f"timing-{seed}-{p}"))
        rows = completions(slots, methods, length, r, per_method=G, wrong=0)
        rows = [rows[i] for i in sorted(r.sample(range(len(rows)), G))]
        texts.append([t for t, *_ in rows])
        labels.append([m for _, m, *_ in rows])
    return texts, labels


if __name__ == "__main__":
    rows = records()
    PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(PATH, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    n_prob = len({r["problem"] for r in rows})
    print(f"wrote {len(rows)} completions of {n_prob} problems to {PATH.name}")
