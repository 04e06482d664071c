# Prints a synthetic Claude Code screen (200x50) for claude-200x50.ansi; see README.md.
import sys
E='\x1b['
def rgb(r,g,b): return f'{E}38;2;{r};{g};{b}m'
def bgrgb(r,g,b): return f'{E}48;2;{r};{g};{b}m'
R=E+'0m'
orange=rgb(215,119,87); grey=rgb(153,153,153); green=rgb(78,186,101); red=rgb(255,107,128); blue=rgb(177,185,249)
W=200
out=[]
def line(s=''): out.append(s)
line(f' {orange}▐▛███▜▌{R}   {E}1mClaude Code{R} {grey}v2.0.14{R}')
line(f'{orange}▝▜█████▛▘{R}  {grey}Sonnet 4.5 · Claude Max{R}')
line(f'  {orange}▘▘ ▝▝{R}    {grey}/home/dev/src/thatch{R}')
line()
line(f'{grey}>{R} fix the failing test in im/screenshot and run the benchmark again; then explain the numbers')
line()
line(f'{rgb(255,255,255)}⏺{R} I\'ll look at the failing test first, then the benchmark.')
line()
line(f'{green}⏺{R} {E}1mBash{R}(go test ./im/screenshot/ -run TestBoxDrawing -count=1)')
line(f'  {grey}⎿{R}  --- FAIL: TestBoxDrawing (0.01s)')
line(f'         render_test.go:142: cell (3,1): no foreground pixel on the middle row')
line(f'     FAIL')
line(f'     {grey}… +4 lines (ctrl+o to expand){R}')
line()
line(f'{green}⏺{R} {E}1mRead{R}(im/screenshot/shapes.go)')
line(f'  {grey}⎿{R}  Read {E}1m212{R} lines (ctrl+o to expand)')
line()
line(f'{green}⏺{R} {E}1mUpdate{R}(im/screenshot/shapes.go)')
line(f'  {grey}⎿{R}  Updated {E}1mim/screenshot/shapes.go{R} with {E}1m2{R} additions and {E}1m1{R} removal')
diff=[(' ','118','\tmx, my := c.w/2, c.h/2'),('-','119','\tuLo, uHi := span(mx, u, lw)'),('+','119','\tuLo, uHi := span(mx, u, lw) // x range of the up arm'),('+','120','\tdLo, dHi := span(mx, d, lw)'),(' ','121','\tlLo, lHi := span(my, l, lw)')]
for sign,n,text in diff:
    text=text.replace('\t','    ')
    if sign=='-':
        body=f'{bgrgb(92,38,48)}{rgb(220,220,220)}       {n} {red}-{rgb(220,220,220)}{text}'
    elif sign=='+':
        body=f'{bgrgb(34,80,48)}{rgb(220,220,220)}       {n} {green}+{rgb(220,220,220)}{text}'
    else:
        body=f'{grey}       {n}  {R}{text}'
    pad=W-6-len(f'       {n} {sign}{text}')
    line(f'      {body}{" "*max(0,pad)}{R}')
line()
line(f'{green}⏺{R} {E}1mBash{R}(go test -bench BenchmarkRender200x50 -benchtime 200x ./im/screenshot/)')
line(f'  {grey}⎿{R}  goos: linux')
line(f'     goarch: amd64')
line(f'     BenchmarkRender200x50-2         200           4871234 ns/op     1572990 B/op         12 allocs/op')
line(f'     {grey}… +2 lines (ctrl+o to expand){R}')
line()
line(f'{rgb(255,255,255)}⏺{R} The test passes now. The box-drawing arms were off by one: {E}3mspan{R} used the heavy width for light lines.')
line(f'  Rendering a 200×50 pane takes about {E}1m4.9 ms{R}; glyph masks are cached, so the cost is mostly blending.')
line()
table=[('Case','Before','After'),('Render 200×50','7.2 ms','4.9 ms'),('PNG 200×50','19.0 ms','15.1 ms')]
line('  ┌────────────────┬─────────┬─────────┐')
for i,(a,b,c) in enumerate(table):
    line(f'  │ {a:<14} │ {b:>7} │ {c:>7} │')
    if i==0: line('  ├────────────────┼─────────┼─────────┤')
line('  └────────────────┴─────────┴─────────┘')
line()
line(f'{orange}✻ Cogitating… {R}{grey}(esc to interrupt · 42s · ↓ 1.3k tokens){R}')
line()
line(f'{grey}╭{"─"*(W-2)}╮{R}')
line(f'{grey}│{R} > {E}7m {R}{" "*(W-6)}{grey}│{R}')
line(f'{grey}╰{"─"*(W-2)}╯{R}')
line(f'  {rgb(175,135,255)}⏵⏵ accept edits on{R} {grey}(shift+tab to cycle){R}' + ' '*120 + f'{grey}Context left until auto-compact: 38%{R}')
while len(out) < 49: out.append('')
sys.stdout.write('\r\n'.join(out[:50]))
